// Package carttest runs the bench's checkout and order workloads end to
// end on a store, for adapters' integration tests.
package carttest

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"allot/bench"
	"allot/bench/cart"
	"allot/inventory"
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

// RunPipelinedOnStore runs the small checkout workload of RunOnStore with
// depth new carts a round per worker (--pipeline depth, through
// store.CheckoutPipeliner) and fails t if the check fails; first it checks
// one batch's replies call by call (CheckPipelineReplies).
func RunPipelinedOnStore(t *testing.T, open func(t *testing.T) store.Store, depth int) {
	t.Run("pipeline replies", func(t *testing.T) {
		st := open(t)
		defer st.Close()
		CheckPipelineReplies(t, st)
	})
	t.Run("bench checkout pipelined", func(t *testing.T) {
		st := open(t)
		defer st.Close()
		w, err := cart.Generate(cart.Params{Preset: cart.PresetHot, Carts: 2000, Seed: 3, ConfirmShare: 0.7, CancelShare: 0.2, ResendShare: 0.05})
		if err != nil {
			t.Fatal(err)
		}
		cfg := bench.KindConfig{RunConfig: bench.RunConfig{Workers: 4, Store: "under-test", Pipeline: depth}}
		if err := cfg.RunConfig.Validate(); err != nil {
			t.Fatal(err)
		}
		opt := cart.Options{TTL: 100 * time.Millisecond, ExpiryWait: 10 * time.Second, Sweep: store.CheckoutConfig{SweepInterval: 5 * time.Millisecond}}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		res, err := cart.Run(ctx, cart.ModeCheckout, w, opt, cfg, st)
		if err != nil {
			t.Fatal(err)
		}
		if !res.Check.OK || res.Errors > 0 {
			t.Fatalf("pipelined checkout on this store: check %v (%d violations: %v), %d errors %v", res.Check.OK, res.Check.ViolationCount, res.Check.Violations, res.Errors, res.ErrorSamples)
		}
		x := res.Extra
		if x["confirmed"].(int64) == 0 || x["cancelled"].(int64) == 0 || x["expired"].(int64) == 0 {
			t.Fatalf("want every fate among the carts, got %v", x)
		}
		if cpr, _ := x["pipeline_calls_per_round"].(float64); cpr < float64(depth) {
			t.Fatalf("%.1f calls a round at --pipeline %d: the carts were not pipelined", cpr, depth)
		}
		t.Logf("pipelined checkout: %.0f carts/s, p99 %.2f ms, extra %v", res.OpsPerSec, res.LatencyMS.P99, x)
	})
}

// CheckPipelineReplies loads one group into st and sends batches whose
// replies are known, checking each call's reply: held, insufficient and
// invalid holds, confirms and cancels of held and unknown holds, and
// repeats, mixed in one batch.
func CheckPipelineReplies(t *testing.T, st store.Store) {
	ctx := context.Background()
	g := inventory.GroupKey{SKU: "pipe-sku", Condition: "new", Source: "s"}
	rows := []inventory.Row{{Key: g.Row("w1"), Count: 3, Price: 1}, {Key: g.Row("w2"), Count: 4, Price: 1}}
	if err := st.Load(ctx, rows); err != nil {
		t.Fatal(err)
	}
	if p, ok := st.(store.CheckoutPreparer); ok {
		stop, err := p.PrepareCheckout(ctx, store.CheckoutConfig{})
		if err != nil {
			t.Fatal(err)
		}
		defer stop()
	}
	se, err := st.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer se.Close()
	pp, ok := se.(store.CheckoutPipeliner)
	if !ok {
		t.Fatalf("%T does not implement store.CheckoutPipeliner", se)
	}
	nonce := strconv.FormatInt(time.Now().UnixNano(), 36)
	id := func(s string) string { return "p-" + nonce + "-" + s }
	ttl := time.Minute
	line := func(n int64) []store.CartLine { return []store.CartLine{{Group: g, N: n}} }
	type want struct {
		code  store.CheckoutCode
		lines []store.HoldLine
	}
	send := func(calls []store.CheckoutCall, wants []want) {
		t.Helper()
		if err := pp.CheckoutPipeline(ctx, calls); err != nil {
			t.Fatal(err)
		}
		for i := range calls {
			c, w := &calls[i], wants[i]
			if c.Err != nil || c.Code != w.code {
				t.Fatalf("call %d (%s %s): code %s err %v, want %s", i, c.Kind, c.Hold, c.Code, c.Err, w.code)
			}
			if c.Kind == store.CallHold && (c.Res.Code != w.code || !slices.Equal(c.Res.Lines, w.lines)) {
				t.Fatalf("call %d (hold %s): reply %s %v, want %s %v", i, c.Hold, c.Res.Code, c.Res.Lines, w.code, w.lines)
			}
		}
	}
	// Batch 1: a takes 2 from w1 (3 and 4 units); a hold with ttl 0 is
	// invalid; confirming or cancelling an unknown hold is not found.
	b1 := []store.CheckoutCall{
		{Kind: store.CallHold, Hold: id("a"), TTL: ttl, Lines: line(2)},
		{Kind: store.CallHold, Hold: id("bad"), TTL: 0, Lines: line(1)},
		{Kind: store.CallConfirm, Hold: id("nobody")},
		{Kind: store.CallCancel, Hold: id("nobody2")},
	}
	send(b1, []want{
		{store.CheckoutOK, []store.HoldLine{{Row: g.Row("w1"), Count: 2}}},
		{store.CheckoutInvalid, nil},
		{store.CheckoutNotFound, nil},
		{store.CheckoutNotFound, nil},
	})
	// Batch 2: a repeat of a answers the first reply; b asks for 6 of the
	// 5 left (insufficient, line 0).
	b2 := []store.CheckoutCall{
		{Kind: store.CallHold, Hold: id("a"), TTL: ttl, Lines: line(2)},
		{Kind: store.CallHold, Hold: id("b"), TTL: ttl, Lines: line(6)},
	}
	send(b2, []want{
		{store.CheckoutOK, []store.HoldLine{{Row: g.Row("w1"), Count: 2}}},
		{store.CheckoutInsufficient, nil},
	})
	if b2[1].Res.Short != 0 || b2[1].Res.Available != 5 {
		t.Fatalf("insufficient hold: short line %d available %d, want 0 and 5", b2[1].Res.Short, b2[1].Res.Available)
	}
	// Batch 3: c takes the 5 left (w1's last 1, then w2's 4); a is
	// confirmed.
	b3 := []store.CheckoutCall{
		{Kind: store.CallHold, Hold: id("c"), TTL: ttl, Lines: line(5)},
		{Kind: store.CallConfirm, Hold: id("a")},
	}
	send(b3, []want{
		{store.CheckoutOK, []store.HoldLine{{Row: g.Row("w1"), Count: 1}, {Row: g.Row("w2"), Count: 4}}},
		{store.CheckoutOK, nil},
	})
	// Batch 4: c is cancelled (its units go back); cancelling a, which is
	// confirmed, is refused. Batch 5: a repeated confirm of a is OK; c,
	// cancelled, cannot be confirmed.
	b4 := []store.CheckoutCall{
		{Kind: store.CallCancel, Hold: id("c")},
		{Kind: store.CallCancel, Hold: id("a")},
	}
	send(b4, []want{{store.CheckoutOK, nil}, {store.CheckoutConfirmed, nil}})
	b5 := []store.CheckoutCall{
		{Kind: store.CallConfirm, Hold: id("a")},
		{Kind: store.CallConfirm, Hold: id("c")},
	}
	send(b5, []want{{store.CheckoutOK, nil}, {store.CheckoutCancelled, nil}})
	got, err := st.Rows(ctx)
	if err != nil {
		t.Fatal(err)
	}
	total := int64(0)
	for _, r := range got {
		if r.Key.Group() == g {
			total += r.Count
		}
	}
	if total != 5 {
		t.Fatalf("the group holds %d units after a 2-unit confirm out of 7, want 5", total)
	}
}
