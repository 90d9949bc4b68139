// Package checkout registers the bench's "checkout" workload: carts of 1-5
// lines over a Zipf-skewed set of groups, each held with a ttl and then
// confirmed (70%), cancelled (20%) or abandoned (10%, must expire), with a
// share of mutations re-sent under the same key. It runs on stores whose
// sessions implement store.Checkouter; package cart has the generator,
// runner and checker.
package checkout

import (
	"allot/bench"
	"allot/bench/cart"
)

func init() {
	bench.RegisterKind(bench.KindRegistration{
		Name:  "checkout",
		About: "carts held with a ttl, then confirmed, cancelled or abandoned (must expire); carts/s, p99, expiry lag, duplicates",
		New:   func() bench.Kind { return cart.NewKind(cart.ModeCheckout) },
		DurableCalls: "a cart is a HOLD and then a CONFIRM or CANCEL (a HOLD alone if abandoned): two durable calls in sequence, more with re-sends, " +
			"so carts/s is not a share of a bound of one call per op",
	})
}
