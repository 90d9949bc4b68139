package engine

import (
	"fmt"
	"testing"
	"time"

	"allot/inventory"
)

// TestRequestsWaitForEveryDueHold: a request is applied only after every
// hold due by its batch's stamp expired (DESIGN.md, "Expiry by the
// engine's clock"), however many are due at once. A batch expires a
// bounded slice of them (expirySliceMax); a capture that came while more
// were due than one slice was applied against rows still short of the
// rest: INSUFFICIENT, available 4096 of 10000, an answer a keyed request
// keeps for the whole retention window.
func TestRequestsWaitForEveryDueHold(t *testing.T) {
	const holds = 2*expirySliceMax + 1808 // 10000
	for _, mode := range []Durability{DurabilityFsync, DurabilityWrite, DurabilityNone} {
		for _, batch := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/batch=%v", mode, batch), func(t *testing.T) {
				clock := newFakeClock()
				// A small frame bound makes the fsync mode's expiries fill
				// frames too: the request waits for the flusher to take them.
				e := mustOpen(t, Config{Dir: t.TempDir(), Durability: mode, Clock: clock, TickInterval: -1, FrameBytesMax: 64 << 10})
				defer e.Close()
				must(e.Stock(rk("a", "w1"), holds, 1))
				lines := []inventory.Demand{line("a", 1)}
				for i := range holds {
					if res := must(e.Hold(fmt.Sprintf("h%d", i), time.Minute, lines)); res.Code != inventory.CodeOK {
						t.Fatalf("hold %d: %+v", i, res)
					}
				}
				clock.Advance(time.Minute)
				capture := inventory.Capture(gk("a"), holds)
				capture.IdempotencyKey = "k"
				var res inventory.Result
				if batch {
					// A pipeline's round: two captures in one batch.
					rs := []*Request{NewRequest(), NewRequest()}
					rs[0].Op, rs[1].Op = inventory.Capture(gk("a"), holds-1), inventory.Capture(gk("a"), 1)
					if _, err := e.SubmitBatch(rs); err != nil {
						t.Fatal(err)
					}
					for _, r := range rs {
						if err := r.Wait(); err != nil {
							t.Fatal(err)
						}
						if r.Result.Code != inventory.CodeOK {
							t.Fatalf("capture %d after every hold was due: %s %s", r.Op.N, r.Result.Code, r.Result.Detail)
						}
					}
					res = rs[1].Result
				} else {
					res = must(e.Do(capture, nil))
				}
				if res.Code != inventory.CodeOK {
					t.Fatalf("capture of %d after every hold was due: %s %s", holds, res.Code, res.Detail)
				}
				if s := e.Stats().State; s.Expired != holds || s.HoldsActive != 0 {
					t.Fatalf("after the capture: %d expired, %d held; want %d, 0", s.Expired, s.HoldsActive, holds)
				}
			})
		}
	}
}
