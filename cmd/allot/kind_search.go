package main

// The search workload: case-insensitive title-prefix queries over a product
// catalog (store.Searcher).
import (
	_ "allot/bench/search"
)
