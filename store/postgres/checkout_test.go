package postgres_test

import (
	"testing"

	"allot/bench/cart/carttest"
	"allot/store"
	"allot/store/storetest"
)

func TestCheckoutConformance(t *testing.T) {
	for _, d := range []store.Durability{store.DurabilityFsync, store.DurabilityNone} {
		t.Run(string(d), func(t *testing.T) {
			storetest.RunCheckout(t, func(t *testing.T) store.Store { return open(t, d) })
		})
	}
}

func TestCheckoutBench(t *testing.T) {
	carttest.RunOnStore(t, func(t *testing.T) store.Store { return open(t, store.DurabilityWrite) })
}
