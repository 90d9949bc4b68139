package redis

import (
	"testing"

	"allot/bench/cart/carttest"
	"allot/store/storetest"
)

func TestCheckoutConformance(t *testing.T) { storetest.RunCheckout(t, open) }

func TestCheckoutBench(t *testing.T) { carttest.RunOnStore(t, open) }
