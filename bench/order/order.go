// Package order registers the bench's "order" workload: orders of 2 lines
// (--lines 1..5) over a Zipf-skewed set of groups, each all or nothing,
// with a share re-sent under the same idempotency key. It runs on stores
// whose sessions implement store.Orderer; package cart has the generator,
// runner and checker.
package order

import (
	"allot/bench"
	"allot/bench/cart"
)

func init() {
	bench.RegisterKind(bench.KindRegistration{
		Name:  "order",
		About: "multi-line orders, all or nothing, with idempotency keys; orders/s, p99, duplicates",
		New:   func() bench.Kind { return cart.NewKind(cart.ModeOrder) },
		DurableCalls: "an order is one call, but on a saga store (dtm) several durable steps in sequence, " +
			"so orders/s is not a share of a bound of one call per op",
	})
}
