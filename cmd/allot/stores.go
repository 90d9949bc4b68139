package main

// The stores the bench can run, each registering itself from its init
// function. One blank import per adapter.
import (
	_ "allot/store/dtm"
	_ "allot/store/embedded"
	_ "allot/store/memory"
	_ "allot/store/mysql"
	_ "allot/store/naive"
	_ "allot/store/postgres"
	_ "allot/store/redis"
	_ "allot/store/remote"
	_ "allot/store/tarantool"
)
