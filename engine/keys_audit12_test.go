package engine

import (
	"errors"
	"strings"
	"testing"
	"time"

	"allot/inventory"
)

// keyedCapture is a capture of one unit of group a with key.
func keyedCapture(key string) inventory.Op {
	op := inventory.Capture(gk("a"), 1)
	op.IdempotencyKey = key
	return op
}

// wantKeysFull checks that err refuses a new key at the limit: the
// "not applied" class, naming the limit and its flag.
func wantKeysFull(t *testing.T, what string, res inventory.Result, err error) {
	t.Helper()
	if !errors.Is(err, ErrUnavailable) || errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("%s: %+v %v, want ErrUnavailable", what, res, err)
	}
	if msg := err.Error(); !strings.Contains(msg, "idempotency keys") || !strings.Contains(msg, "--keys-max") {
		t.Fatalf("%s: %q does not name the key limit and its flag", what, msg)
	}
}

// Past KeysMax a new idempotency key is refused before anything is
// applied (ErrUnavailable, nothing journaled, no event), while a repeat of
// a kept key, a mismatch and an op without a key are answered as before;
// a restart replays every kept key whatever the limit is then.
func TestKeysMaxRefusesNewKeys(t *testing.T) {
	for _, mode := range []Durability{DurabilityFsync, DurabilityWrite, DurabilityNone} {
		t.Run(string(mode), func(t *testing.T) {
			dir := t.TempDir()
			e := mustOpen(t, Config{Dir: dir, Durability: mode, KeysMax: 3})
			must(e.Stock(rk("a", "w1"), 10, 1))
			for _, k := range []string{"k1", "k2", "k3"} {
				if res := must(e.Do(keyedCapture(k), nil)); res.Code != inventory.CodeOK || res.Repeat {
					t.Fatalf("capture %s: %+v", k, res)
				}
			}
			journaled := e.Stats().Journaled
			res, err := e.Do(keyedCapture("k4"), nil)
			wantKeysFull(t, "a fourth key", res, err)
			if res := must(e.Available(gk("a"))); res.Count != 7 {
				t.Fatalf("available %d after a refused capture, want 7", res.Count)
			}
			if st := e.Stats(); st.Journaled != journaled || st.State.Keys != 3 {
				t.Fatalf("a refused op journaled %d ops, keys %d", st.Journaled-journaled, st.State.Keys)
			}
			// A keyed order is refused the same way.
			order := inventory.Order([]inventory.Demand{{Group: gk("a"), N: 1}})
			order.IdempotencyKey = "o1"
			res, err = e.Do(order, nil)
			wantKeysFull(t, "a keyed order", res, err)
			// A repeat of a kept key still gets its first reply.
			if res := must(e.Do(keyedCapture("k1"), nil)); res.Code != inventory.CodeOK || !res.Repeat {
				t.Fatalf("repeat of k1: %+v", res)
			}
			other := keyedCapture("k2")
			other.N = 2
			if res := must(e.Do(other, nil)); res.Code != inventory.CodeMismatch {
				t.Fatalf("k2 with other arguments: %+v, want a mismatch", res)
			}
			if res := must(e.Capture(gk("a"), 1, nil)); res.Code != inventory.CodeOK {
				t.Fatalf("a capture without a key: %+v", res)
			}
			// In a batch (the server's path): the new key refused, the
			// repeat behind it answered.
			rs := []*Request{NewRequest(), NewRequest()}
			rs[0].Op, rs[1].Op = keyedCapture("k5"), keyedCapture("k3")
			if n, err := e.SubmitBatch(rs); n != 2 || err != nil {
				t.Fatalf("batch: %d %v", n, err)
			}
			err0, err1 := rs[0].Wait(), rs[1].Wait()
			wantKeysFull(t, "a new key in a batch", rs[0].Result, err0)
			if err1 != nil || !rs[1].Result.Repeat {
				t.Fatalf("a repeat in a batch: %+v %v", rs[1].Result, err1)
			}
			if res := must(e.Available(gk("a"))); res.Count != 6 {
				t.Fatalf("available %d, want 6", res.Count)
			}
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}

			// Recovery replays every key, even under a limit below what
			// is kept: the limit refuses new requests only.
			e = mustOpen(t, Config{Dir: dir, Durability: mode, KeysMax: 1})
			if n := e.Stats().State.Keys; n != 3 {
				t.Fatalf("%d keys after recovery, want 3", n)
			}
			if res := must(e.Do(keyedCapture("k2"), nil)); !res.Repeat {
				t.Fatalf("repeat of k2 after a restart: %+v", res)
			}
			res, err = e.Do(keyedCapture("k4"), nil)
			wantKeysFull(t, "a new key after a restart", res, err)
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
			e = mustOpen(t, Config{Dir: dir, Durability: mode, KeysMax: 4})
			defer e.Close()
			if res := must(e.Do(keyedCapture("k4"), nil)); res.Code != inventory.CodeOK || res.Repeat {
				t.Fatalf("k4 under a higher limit: %+v", res)
			}
			if res := must(e.Available(gk("a"))); res.Count != 5 {
				t.Fatalf("available %d, want 5", res.Count)
			}
		})
	}
}

// A standby applies the primary's frames whatever its own KeysMax: they
// hold what the primary acknowledged. Promoted, it refuses new keys past
// its limit.
func TestKeysMaxNeverRefusesReplay(t *testing.T) {
	p := mustOpen(t, Config{Dir: t.TempDir(), Durability: DurabilityWrite, Replicated: true})
	defer p.Close()
	s := mustOpen(t, Config{Dir: t.TempDir(), Durability: DurabilityWrite, Replicated: true, KeysMax: 1})
	defer s.Close()
	log := &logReplicator{}
	if err := p.Promote(log); err != nil {
		t.Fatal(err)
	}
	must(p.Stock(rk("a", "w1"), 10, 1))
	for _, k := range []string{"k1", "k2", "k3"} {
		must(p.Do(keyedCapture(k), nil))
	}
	for _, f := range log.take() {
		if err := s.ApplyFrame(f); err != nil {
			t.Fatalf("a standby under a lower limit: %v", err)
		}
	}
	if n := s.Stats().State.Keys; n != 3 {
		t.Fatalf("standby keeps %d keys, want 3", n)
	}
	if err := s.Promote(&logReplicator{}); err != nil {
		t.Fatal(err)
	}
	if res := must(s.Do(keyedCapture("k3"), nil)); !res.Repeat {
		t.Fatalf("repeat on the promoted standby: %+v", res)
	}
	res, err := s.Do(keyedCapture("k4"), nil)
	wantKeysFull(t, "a new key on the promoted standby", res, err)
}

// KeysMax defaults to KeysMaxDefault and must be positive.
func TestKeysMaxConfig(t *testing.T) {
	c := Config{Dir: "x"}
	if err := c.Validate(); err != nil || c.KeysMax != KeysMaxDefault {
		t.Fatalf("default: %d %v", c.KeysMax, err)
	}
	c = Config{Dir: "x", KeysMax: -1}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "KeysMax") {
		t.Fatalf("negative KeysMax: %v", err)
	}
}

// Kept keys leave once past the retention window, and new keys are taken
// again: the limit refuses a burst, it does not close the engine to keys
// for good.
func TestKeysMaxRoomAfterTheWindow(t *testing.T) {
	clock := newFakeClock()
	e := mustOpen(t, Config{Dir: t.TempDir(), Durability: DurabilityWrite, KeysMax: 2, Retention: time.Second, Clock: clock, TickInterval: -1})
	defer e.Close()
	must(e.Stock(rk("a", "w1"), 10, 1))
	must(e.Do(keyedCapture("k1"), nil))
	must(e.Do(keyedCapture("k2"), nil))
	res, err := e.Do(keyedCapture("k3"), nil)
	wantKeysFull(t, "a third key", res, err)
	clock.Advance(1001 * time.Millisecond)
	if res := must(e.Do(keyedCapture("k3"), nil)); res.Code != inventory.CodeOK || res.Repeat {
		t.Fatalf("a new key once the kept ones passed the window: %+v", res)
	}
	if n := e.Stats().State.Keys; n != 1 {
		t.Fatalf("%d keys kept, want 1", n)
	}
}
