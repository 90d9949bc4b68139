// Package carttest runs the bench's checkout and order workloads end to
// end on a store, for adapters' integration tests.
package carttest

import (
	"context"
	"testing"
	"time"

	"allot/bench"
	"allot/bench/cart"
	"allot/store"
)

// RunOnStore runs a small checkout and a small order workload (hot preset,
// 1,000 carts, 8 workers, a 100 ms ttl) on the stores open returns and
// fails t if either check fails: the bench's end-to-end test of an adapter.
func RunOnStore(t *testing.T, open func(t *testing.T) store.Store) {
	RunModesOnStore(t, open, cart.ModeCheckout, cart.ModeOrder)
}

// RunModesOnStore is RunOnStore for the given workloads only (a store
// that runs orders and no holds).
func RunModesOnStore(t *testing.T, open func(t *testing.T) store.Store, modes ...cart.Mode) {
	for _, mode := range modes {
		t.Run("bench "+mode.String(), func(t *testing.T) {
			st := open(t)
			defer st.Close()
			p := cart.Params{Preset: cart.PresetHot, Carts: 1000, Seed: 1, ConfirmShare: 0.7, CancelShare: 0.2, ResendShare: 0.05}
			if mode == cart.ModeOrder {
				p.Lines, p.ConfirmShare, p.CancelShare = 2, 1, 0
			}
			w, err := cart.Generate(p)
			if err != nil {
				t.Fatal(err)
			}
			cfg := bench.KindConfig{RunConfig: bench.RunConfig{Workers: 8, Store: "under-test"}}
			if err := cfg.RunConfig.Validate(); err != nil {
				t.Fatal(err)
			}
			opt := cart.Options{TTL: 100 * time.Millisecond, ExpiryWait: 10 * time.Second, Sweep: store.CheckoutConfig{SweepInterval: 5 * time.Millisecond}}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			res, err := cart.Run(ctx, mode, w, opt, cfg, st)
			if err != nil {
				t.Fatal(err)
			}
			if !res.Check.OK || res.Errors > 0 {
				t.Fatalf("%s on this store: check %v (%d violations: %v), %d errors %v", mode, res.Check.OK, res.Check.ViolationCount, res.Check.Violations, res.Errors, res.ErrorSamples)
			}
			t.Logf("%s: %.0f %s/s, p99 %.2f ms, extra %v", mode, res.OpsPerSec, map[cart.Mode]string{cart.ModeCheckout: "carts", cart.ModeOrder: "orders"}[mode], res.LatencyMS.P99, res.Extra)
		})
	}
}
