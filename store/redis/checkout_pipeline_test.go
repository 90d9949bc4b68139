package redis

import (
	"testing"

	"allot/bench/cart/carttest"
)

// TestCheckoutPipelined runs the checkout workload with 16 carts a round
// per worker (pipelined EVALSHAs) and checks one batch's replies call by
// call.
func TestCheckoutPipelined(t *testing.T) { carttest.RunPipelinedOnStore(t, open, 16) }
