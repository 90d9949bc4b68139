package engine

import (
	"errors"
	"testing"
	"time"

	"allot/vfs"
)

// In none mode an op's frame is written later, by another op: the next one
// at a new millisecond writes it before applying itself. If that write
// fails, the engine stops; the op that met the failure must not be
// acknowledged as if nothing had happened. It is refused, not applied (as
// SubmitBatch refuses it): the engine stopped before it was applied.
func TestNoneModeOpThatMeetsAJournalFailureIsNotAcknowledged(t *testing.T) {
	fs := vfs.NewFaulty(vfs.NewMem())
	clock := newFakeClock()
	e := mustOpen(t, Config{Dir: "/d", FS: fs, Durability: DurabilityNone, Clock: clock, TickInterval: -1, ManualFlush: true})
	defer e.Close()
	must(e.Stock(rk("a", "w1"), 5, 1)) // pending: none mode has not written it
	select {
	case <-e.Stopped():
		t.Fatal("Stopped is closed before any failure")
	default:
	}
	fs.FailWritesAfter(0)
	clock.Advance(time.Millisecond) // the next op begins a new frame: the pending one is written first
	_, err := e.Capture(gk("a"), 1, nil)
	if !e.Stats().Failed {
		t.Fatal("the write of the pending frame did not fail the engine")
	}
	select {
	case <-e.Stopped():
	default:
		t.Fatal("the engine failed but Stopped is not closed")
	}
	if !errors.Is(e.Failure(), vfs.ErrInjected) {
		t.Fatalf("Failure() = %v, want the injected write failure", e.Failure())
	}
	if !errors.Is(err, ErrUnavailable) || !errors.Is(err, vfs.ErrInjected) {
		t.Fatalf("the capture that met the journal failure was answered %v, want a refusal naming the failure", err)
	}
	if _, err := e.Capture(gk("a"), 1, nil); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("a capture after the failure: %v, want unavailable", err)
	}
}
