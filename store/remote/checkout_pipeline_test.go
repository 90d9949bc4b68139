package remote_test

import (
	"context"
	"testing"

	"allot/bench/cart/carttest"
	"allot/server/servertest"
	"allot/store"
	"allot/store/remote"
)

// TestCheckoutPipelined runs the checkout workload with 16 carts a round
// per worker over RESP (HOLD, CONFIRM, CANCEL pipelined on each session's
// connection) against a server the store starts, and checks one batch's
// replies call by call.
func TestCheckoutPipelined(t *testing.T) {
	bin := servertest.BuildAllot(t)
	carttest.RunPipelinedOnStore(t, func(t *testing.T) store.Store {
		st, err := remote.Open(context.Background(), store.Config{Durability: store.DurabilityWrite, Workers: 8, Pipeline: 16}, remote.Options{Binary: bin})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}, 16)
}
