package engine

import (
	"fmt"
	"testing"
	"time"

	"allot/inventory"
	"allot/vfs"
)

// TestKeysPastTheWindowDoNotFillTheLimitAfterARestart: replay rebuilds
// every idempotency key the journal holds, those long past the retention
// window included (it never collects), so a restarted engine kept far
// more keys than Config.KeysMax, all past the window. The live engine had
// dropped them chunk by chunk; the restarted one dropped at most two
// chunks per request and refused new keys (ErrUnavailable, "refused until
// kept ones pass the retention window") that it had to accept: every kept
// key had passed the window.
func TestKeysPastTheWindowDoNotFillTheLimitAfterARestart(t *testing.T) {
	const keysMax = 20_000
	clock := newFakeClock()
	cfg := Config{Dir: "/d", FS: vfs.NewMem(), Durability: DurabilityNone, Clock: clock, TickInterval: -1,
		Retention: 100 * time.Millisecond, KeysMax: keysMax}
	e := mustOpen(t, cfg)
	// 200,000 keys, 10,000 at a time: each lot passes the window before
	// the next comes, so the live engine never holds more than a lot or
	// two of chunks past it.
	for lot := range 20 {
		for i := range 10_000 {
			op := inventory.Capture(gk("none"), 1) // INSUFFICIENT: a short reply, remembered
			op.IdempotencyKey = fmt.Sprintf("k%d-%d", lot, i)
			if _, err := e.Do(op, nil); err != nil {
				t.Fatalf("lot %d key %d: %v", lot, i, err)
			}
		}
		clock.Advance(time.Second)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = mustOpen(t, cfg)
	defer e.Close()
	clock.Advance(time.Second)
	// Every kept key is past the window: a new key must be taken.
	op := inventory.Capture(gk("none"), 1)
	op.IdempotencyKey = "new"
	if _, err := e.Do(op, nil); err != nil {
		t.Fatalf("a new key after the restart, every kept key past the window (%d kept): %v", e.Stats().State.Keys, err)
	}
}
