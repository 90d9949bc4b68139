package tarantool

import (
	"context"
	"testing"

	"allot/bench/cart/carttest"
	"allot/store"
	"allot/store/storetest"
)

// openCheckout opens the Tarantool store name, in the running server's
// durability, for the checkout tests.
func openCheckout(name string) func(t *testing.T) store.Store {
	return func(t *testing.T) store.Store {
		d := requireServer(t)
		st, err := store.Open(context.Background(), name, store.Config{Durability: d, Workers: 16})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
}

func TestCheckoutConformance(t *testing.T) {
	for _, name := range stores {
		t.Run(name, func(t *testing.T) { storetest.RunCheckout(t, openCheckout(name)) })
	}
}

func TestCheckoutBench(t *testing.T) {
	for _, name := range stores {
		t.Run(name, func(t *testing.T) { carttest.RunOnStore(t, openCheckout(name)) })
	}
}

// TestCheckoutPipelined runs the checkout workload with 16 carts a round
// per worker (asynchronous calls, store.CheckoutPipeliner) on every
// Tarantool store and checks one batch's replies call by call.
func TestCheckoutPipelined(t *testing.T) {
	for _, name := range stores {
		t.Run(name, func(t *testing.T) { carttest.RunPipelinedOnStore(t, openCheckout(name), 16) })
	}
}
