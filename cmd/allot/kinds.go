package main

// The bench's workload kinds other than "ims" register themselves from
// their packages' init functions.
import (
	_ "allot/bench/checkout"
	_ "allot/bench/order"
)
