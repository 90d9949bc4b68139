package tarantool

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"allot/inventory"
	"allot/store"
)

// A checkout run whose bench process dies (or whose stop never reaches
// the server) leaves its expiry fiber running on the server and its held
// holds in <space>_holds. Load truncated only the rows: the next run's
// fresh rows then got the dead run's held units added when the fiber
// expired those holds, so conservation failed in a run that never made a
// hold. Load must forget the holds (and order keys) of earlier runs, as
// the Redis adapter's Load does (it clears every "allot:" key).
func TestAudit17LoadForgetsHoldsOfEarlierRun(t *testing.T) {
	for _, name := range stores {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			g := inventory.GroupKey{SKU: "audit17-orphan", Condition: "new", Source: "own"}
			rows := []inventory.Row{{Key: g.Row("w1"), Count: 10, Price: 1}}
			st := openStore(t, name, rows)
			defer st.Close()
			const sweep = 5 * time.Millisecond
			stop, err := st.PrepareCheckout(ctx, store.CheckoutConfig{SweepInterval: sweep})
			if err != nil {
				t.Fatal(err)
			}
			// The "dead run": its fiber is stopped only when the test ends.
			defer stop()
			se, err := st.Session(ctx)
			if err != nil {
				t.Fatal(err)
			}
			co := se.(store.Checkouter)
			const ttl = 200 * time.Millisecond
			var res store.HoldResult
			if err := co.Hold(ctx, "audit17-orphan", ttl, []store.CartLine{{Group: g, N: 4}}, &res); err != nil || res.Code != store.CheckoutOK {
				t.Fatalf("hold = %v %v", res.Code, err)
			}
			if err := co.(store.Orderer).Order(ctx, "audit17-key", []store.CartLine{{Group: g, N: 1}}, &res); err != nil || res.Code != store.CheckoutOK {
				t.Fatalf("order = %v %v", res.Code, err)
			}
			// The next run loads its rows.
			if err := st.Load(ctx, rows); err != nil {
				t.Fatal(err)
			}
			var info store.HoldInfo
			if found, err := co.HoldGet(ctx, "audit17-orphan", &info); err != nil || found {
				t.Errorf("after Load, the earlier run's hold is still there (found %v, state %v, err %v)", found, info.State, err)
			}
			// A key of the earlier run must not answer for the next one.
			if err := co.(store.Orderer).Order(ctx, "audit17-key", []store.CartLine{{Group: g, N: 1}}, &res); err != nil || res.Code != store.CheckoutOK {
				t.Fatalf("order after Load = %v %v", res.Code, err)
			}
			want := int64(9)
			// Past the deadline, and many sweeps later, the fresh rows
			// hold what the load and the one order left.
			time.Sleep(ttl + 40*sweep)
			got, err := st.Rows(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || got[0].Count != want {
				t.Errorf("rows after Load and the old hold's deadline: %+v, want one row of %d", got, want)
			}
		})
	}
}

// countingCtx counts how often the connector is handed the context: each
// Done() of a request's context is go-tarantool starting (or checking) a
// watchdog goroutine for that one request.
type countingCtx struct {
	context.Context
	done atomic.Int64
}

func (c *countingCtx) Done() <-chan struct{} {
	c.done.Add(1)
	return c.Context.Done()
}

// The record sessions (workloads rw and kv) gave every request its
// context. go-tarantool v2 then starts a watchdog goroutine per request,
// which on this machine cut pipelined reads from about 330,000/s to
// 140,000-280,000/s: a cost the capture path avoids (session.call) and
// no other adapter pays per request. The requests must carry no context;
// the connection's Timeout bounds them, and a done context stops the
// call before it sends anything.
func TestAudit17RecordRequestsCarryNoContext(t *testing.T) {
	for _, name := range stores {
		t.Run(name, func(t *testing.T) {
			d := requireServer(t)
			st, err := store.Open(context.Background(), name, store.Config{Durability: d, Workers: 2})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			sp, err := st.(store.RWStore).RWOpen(context.Background(), store.RWOptions{Lock: store.RWLockSoft, Durable: d == store.DurabilityFsync})
			if err != nil {
				t.Fatal(err)
			}
			defer sp.Close()
			const n = 16
			recs := make([]store.RWRecord, n)
			keys := make([]string, n)
			for i := range recs {
				keys[i] = fmt.Sprintf("k%02d", i)
				recs[i] = store.RWRecord{Key: keys[i], Value: int64(i)}
			}
			if err := sp.Load(context.Background(), recs); err != nil {
				t.Fatal(err)
			}
			se, err := sp.Session(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			defer se.Close()
			p := se.(store.RWPipeliner)
			ctx := &countingCtx{Context: context.Background()}
			values, found := make([]int64, n), make([]bool, n)
			steps := []struct {
				what string
				run  func() error
			}{
				{"PipelineRead", func() error { return p.PipelineRead(ctx, keys, values, found) }},
				{"PipelineWrite", func() error { return p.PipelineWrite(ctx, recs) }},
				{"Read", func() error { _, _, err := se.Read(ctx, keys[0]); return err }},
				{"Write", func() error { return se.Write(ctx, []store.RWRecord{{Key: "new", Value: 1}}) }},
				{"Modify locked", func() error { _, err := se.Modify(ctx, keys[:2], 1, store.RWLocked); return err }},
				{"Modify versioned", func() error { _, err := se.Modify(ctx, keys[:2], 1, store.RWVersioned); return err }},
			}
			for _, step := range steps {
				ctx.done.Store(0)
				if err := step.run(); err != nil {
					t.Fatalf("%s: %v", step.what, err)
				}
				if c := ctx.done.Load(); c != 0 {
					t.Errorf("%s handed its context to the connector %d times (a watchdog goroutine per request)", step.what, c)
				}
			}
			for i := range n {
				if !found[i] || values[i] != int64(i) {
					t.Fatalf("PipelineRead: key %s = %d %v, want %d", keys[i], values[i], found[i], i)
				}
			}
			// A done context still stops a call before it sends.
			done, cancel := context.WithCancel(context.Background())
			cancel()
			if err := p.PipelineWrite(done, []store.RWRecord{{Key: "after-cancel", Value: 1}}); err == nil {
				t.Error("PipelineWrite with a done context succeeded")
			}
			if _, found, err := se.Read(context.Background(), "after-cancel"); err != nil || found {
				t.Errorf("a PipelineWrite with a done context wrote its record (found %v, err %v)", found, err)
			}
		})
	}
}

// The Redis adapter's give-back capped counts near 2^62 that were still
// below the bound (a double compare). Tarantool compares uint64 cdata
// exactly; this pins it: a cancel brings a count near 2^62-1 back exactly,
// and caps only one carried past it.
func TestAudit17GiveBackNearCountMaxIsExact(t *testing.T) {
	ctx := context.Background()
	g := inventory.GroupKey{SKU: "audit17-cap", Condition: "new", Source: "own"}
	for _, name := range stores {
		for _, tc := range []struct {
			initial, release, want int64
		}{
			{inventory.CountMax - 1, 0, inventory.CountMax - 1},
			{inventory.CountMax - 199, 0, inventory.CountMax - 199},
			{inventory.CountMax, 3, inventory.CountMax},
		} {
			t.Run(fmt.Sprintf("%s/%d", name, tc.initial), func(t *testing.T) {
				st := openStore(t, name, []inventory.Row{{Key: g.Row("w1"), Count: tc.initial, Price: 1}})
				stop, err := st.PrepareCheckout(ctx, store.CheckoutConfig{})
				if err != nil {
					t.Fatal(err)
				}
				defer stop()
				se := openSession(t, st)
				var res store.HoldResult
				if err := se.Hold(ctx, "audit17-h", time.Hour, []store.CartLine{{Group: g, N: 3}}, &res); err != nil || res.Code != store.CheckoutOK {
					t.Fatalf("hold 3 = %v %v", res.Code, err)
				}
				if tc.release > 0 {
					if r, err := se.Release(ctx, g.Row("w1"), tc.release); err != nil || r.Code != inventory.CodeOK {
						t.Fatalf("release = %+v %v", r, err)
					}
				}
				if c, err := se.Cancel(ctx, "audit17-h"); err != nil || c != store.CheckoutOK {
					t.Fatalf("cancel = %v %v", c, err)
				}
				rows, err := st.Rows(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if len(rows) != 1 || rows[0].Count != tc.want {
					t.Errorf("after the cancel: %+v, want one row of %d", rows, tc.want)
				}
			})
		}
	}
}
