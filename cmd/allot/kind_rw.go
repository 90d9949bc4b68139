package main

// The record workloads: "rw" (reads, inserts, read-modify-writes with
// locks, versions, transactions) and "kv" (pipelined raw writes and
// reads), and the stores only they run on.
import (
	_ "allot/bench/kv"
	_ "allot/bench/rw"
	_ "allot/store/rabbitmq"
)
