package engine

import (
	"testing"
	"time"

	"allot/inventory"
)

// TestReopenWithLongerRetention: an operator who raises --retention and
// restarts must get the same state back. Live, a hold id and an
// idempotency key reused past the short window were new requests and were
// journaled as such; replay under the longer window took them for repeats
// of the first use, which changed nothing, and recovery refused the
// journal.
func TestReopenWithLongerRetention(t *testing.T) {
	clock := newFakeClock()
	dir := t.TempDir()
	short := Config{Dir: dir, Clock: clock, TickInterval: -1, Retention: 100 * time.Millisecond}
	e := mustOpen(t, short)
	capture := reusePastTheWindow(t, e, clock)
	// 10 stocked, 2 held, 1 + 1 captured.
	if got := must(e.Available(gk("a"))).Count; got != 6 {
		t.Fatalf("available %d, want 6", got)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}

	long := short
	long.Retention = 24 * time.Hour
	e, err := Open(long)
	if err != nil {
		t.Fatalf("reopening with a longer retention: %v", err)
	}
	defer e.Close()
	if got := must(e.Available(gk("a"))).Count; got != 6 {
		t.Fatalf("available %d after reopening, want 6", got)
	}
	if res := must(e.HoldGet("h")); res.State != inventory.HoldHeld {
		t.Fatalf("hold after reopening: %+v", res)
	}
	// The longer window rules from now on: the key's second use is
	// remembered and a repeat gets its reply.
	if res := must(e.Do(capture, nil)); !res.Repeat {
		t.Fatalf("key repeat after reopening applied again: %+v", res)
	}
}

// TestStandbyWithLongerRetention: a standby whose retention window is
// longer than its primary's applies the primary's frames. A frame holds
// only requests that were new on the primary; the standby took a hold id
// and a key reused past the primary's window for repeats under its own,
// refused the frame as diverged and stopped.
func TestStandbyWithLongerRetention(t *testing.T) {
	clock := newFakeClock()
	p := mustOpen(t, Config{Dir: t.TempDir(), Clock: clock, TickInterval: -1, Retention: 100 * time.Millisecond, Replicated: true})
	s := mustOpen(t, Config{Dir: t.TempDir(), TickInterval: -1, Retention: 24 * time.Hour, Replicated: true})
	defer s.Close()
	log := &logReplicator{}
	if err := p.Promote(log); err != nil {
		t.Fatal(err)
	}
	reusePastTheWindow(t, p, clock)
	for _, f := range log.take() {
		if err := s.ApplyFrame(f); err != nil {
			t.Fatalf("the standby refused the primary's frame: %v", err)
		}
	}
	if got := must(s.Available(gk("a"))).Count; got != 6 {
		t.Fatalf("available %d on the standby, want 6", got)
	}
	if res := must(s.HoldGet("h")); res.State != inventory.HoldHeld {
		t.Fatalf("hold on the standby: %+v", res)
	}
	p.Close()
}

// reusePastTheWindow stocks 10 units of group a, holds 2 under id h and
// cancels them, captures 1 under key k, then (a second later, past a
// window shorter than that) holds h and captures under k again: both new
// requests. It returns the keyed capture.
func reusePastTheWindow(t *testing.T, e *Engine, clock *fakeClock) inventory.Op {
	t.Helper()
	must(e.Stock(rk("a", "w1"), 10, 1))
	lines := []inventory.Demand{line("a", 2)}
	must(e.Hold("h", time.Minute, lines))
	must(e.Cancel("h"))
	capture := inventory.Capture(gk("a"), 1)
	capture.IdempotencyKey = "k"
	must(e.Do(capture, nil))
	clock.Advance(time.Second)
	if res := must(e.Hold("h", time.Minute, lines)); res.Code != inventory.CodeOK || res.Repeat {
		t.Fatalf("hold id reused past the window: %+v", res)
	}
	if res := must(e.Do(capture, nil)); res.Code != inventory.CodeOK || res.Repeat {
		t.Fatalf("key reused past the window: %+v", res)
	}
	return capture
}
