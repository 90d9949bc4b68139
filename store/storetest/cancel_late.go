package storetest

import (
	"testing"
	"time"

	"allot/inventory"
	"allot/store"
)

// RunCancelPastDeadline checks a hold whose deadline passed before its
// store's expiry (a peer's sweeper) came: it is expired, whatever asks
// first. Confirm answers EXPIRED; a Cancel then answers OK and gives the
// units back, and the hold stays expired (DESIGN.md: the engine expires
// every hold due before it applies a request, so the cancel meets an
// expired hold), so that a repeated Confirm still answers EXPIRED, not
// CANCELLED. The sweeper runs once a minute here, so it never comes.
func RunCancelPastDeadline(t *testing.T, open Opener) {
	c := setUpCheckoutSweeping(t, open, time.Minute)
	if res := c.hold("late", 20*time.Millisecond, line(cgA, 3)); res.Code != store.CheckoutOK {
		t.Fatalf("Hold = %v", res.Code)
	}
	time.Sleep(100 * time.Millisecond)
	if got := c.confirm("late"); got != store.CheckoutExpired {
		t.Fatalf("confirm past the deadline = %v, want expired", got)
	}
	if got := c.cancel("late"); got != store.CheckoutOK {
		t.Fatalf("cancel past the deadline = %v, want ok", got)
	}
	if got := c.confirm("late"); got != store.CheckoutExpired {
		t.Errorf("confirm again = %v, want expired (it answered expired before the cancel)", got)
	}
	if info, found := c.get("late"); !found || info.State != store.HoldExpired {
		t.Errorf("HoldGet = %v %v, want expired", found, info.State)
	}
	c.wantCounts("the late hold's units are back", map[inventory.RowKey]int64{cgA.Row("w1"): 2, cgA.Row("w2"): 5})
}
