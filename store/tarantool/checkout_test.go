package tarantool

import (
	"context"
	"testing"

	"allot/bench/cart/carttest"
	"allot/store"
	"allot/store/storetest"
)

func TestCheckoutConformance(t *testing.T) {
	for _, name := range stores {
		t.Run(name, func(t *testing.T) {
			storetest.RunCheckout(t, func(t *testing.T) store.Store {
				d := requireServer(t)
				st, err := store.Open(context.Background(), name, store.Config{Durability: d, Workers: 16})
				if err != nil {
					t.Fatal(err)
				}
				return st
			})
		})
	}
}

func TestCheckoutBench(t *testing.T) {
	for _, name := range stores {
		t.Run(name, func(t *testing.T) {
			carttest.RunOnStore(t, func(t *testing.T) store.Store {
				d := requireServer(t)
				st, err := store.Open(context.Background(), name, store.Config{Durability: d, Workers: 16})
				if err != nil {
					t.Fatal(err)
				}
				return st
			})
		})
	}
}
