package embedded

import (
	"context"
	"testing"

	"allot/bench/cart/carttest"
	"allot/store"
)

// TestCheckoutPipelined runs the checkout workload with 16 carts a round
// per worker on the engine (store.CheckoutPipeliner), in both durable
// modes, and checks one batch's replies call by call.
func TestCheckoutPipelined(t *testing.T) {
	for _, mode := range []store.Durability{store.DurabilityFsync, store.DurabilityWrite} {
		t.Run(string(mode), func(t *testing.T) {
			carttest.RunPipelinedOnStore(t, func(t *testing.T) store.Store {
				st, err := store.Open(context.Background(), "embedded", store.Config{Durability: mode, Workers: 4, Pipeline: 16})
				if err != nil {
					t.Fatal(err)
				}
				return st
			}, 16)
		})
	}
}
