package engine

import (
	"fmt"
	"testing"
	"time"

	"allot/inventory"
)

// TestStandbyForgetsWhatThePrimaryForgets: a standby frees the idempotency
// keys (and finished holds) whose retention ended, as the primary does
// once a batch. It applied frames without ever collecting, so a standby
// that ran for weeks held every key and finished hold it had ever seen.
func TestStandbyForgetsWhatThePrimaryForgets(t *testing.T) {
	clock := newFakeClock()
	cfg := func() Config {
		return Config{Dir: t.TempDir(), Durability: DurabilityNone, Clock: clock, TickInterval: -1, Retention: 100 * time.Millisecond, Replicated: true}
	}
	p, s := mustOpen(t, cfg()), mustOpen(t, cfg())
	defer p.Close()
	defer s.Close()
	log := &logReplicator{}
	if err := p.Promote(log); err != nil {
		t.Fatal(err)
	}
	// Keys are freed a whole chunk (1 MiB) at a time, once a later chunk
	// exists: enough keys for several.
	const keys = 60_000
	must(p.Stock(rk("a", "w1"), keys, 1))
	for i := range keys {
		capture := inventory.Capture(gk("a"), 1)
		capture.IdempotencyKey = fmt.Sprintf("k%d", i)
		must(p.Do(capture, nil))
	}
	apply := func() {
		t.Helper()
		for _, f := range log.take() {
			if err := s.ApplyFrame(f); err != nil {
				t.Fatal(err)
			}
		}
	}
	apply()
	if got := s.Stats().State.Keys; got != keys {
		t.Fatalf("the standby remembers %d keys, want %d", got, keys)
	}
	clock.Advance(time.Second) // past every key's window
	must(p.Release(rk("a", "w1"), 1))
	apply()
	pk, sk := p.Stats().State.Keys, s.Stats().State.Keys
	if pk >= keys {
		t.Fatalf("the primary remembers all %d keys past their window", pk)
	}
	if sk != pk {
		t.Fatalf("the standby remembers %d keys past their window, the primary %d", sk, pk)
	}
}
