package engine

import (
	"errors"
	"testing"

	"allot/inventory"
	"allot/vfs"
)

// TestFailedBatchRefusesWhatChangedNothing: in a batch whose journal write
// or sync fails, only the ops that changed state have an unknown outcome.
// A read, a refusal without a key and an idempotent repeat applied
// nothing: they are refused (ErrUnavailable, safe to retry anywhere), not
// answered ErrOutcomeUnknown, which told a client its read "may have been
// applied". Their answers are not given either: they may rest on ops of
// the batch that will not survive.
func TestFailedBatchRefusesWhatChangedNothing(t *testing.T) {
	for _, mode := range []Durability{DurabilityFsync, DurabilityWrite} {
		t.Run(string(mode), func(t *testing.T) {
			fs := vfs.NewFaulty(vfs.NewMem())
			e := mustOpen(t, Config{Dir: "/d", FS: fs, Durability: mode, TickInterval: -1})
			defer e.Close()
			must(e.Stock(rk("a", "w1"), 5, 1))
			keyed := inventory.Capture(gk("a"), 1)
			keyed.IdempotencyKey = "k"
			must(e.Do(keyed, nil))

			ops := []inventory.Op{
				inventory.Capture(gk("a"), 2),   // changes state
				inventory.Available(gk("a")),    // a read
				inventory.Get(rk("a", "w1")),    // a read
				inventory.Capture(gk("a"), 100), // insufficient, no key: changes nothing
				keyed,                           // a repeat: changes nothing
			}
			changes := []bool{true, false, false, false, false}
			if mode == DurabilityFsync {
				fs.FailSyncs(true)
			} else {
				fs.FailWritesAfter(0)
			}
			rs := make([]*Request, len(ops))
			for i, op := range ops {
				rs[i] = NewRequest()
				rs[i].Op = op
			}
			if n, err := e.SubmitBatch(rs); n != len(rs) || err != nil {
				t.Fatalf("submitted %d of %d: %v", n, len(rs), err)
			}
			for i, r := range rs {
				err := r.Wait()
				switch {
				case changes[i] && !errors.Is(err, ErrOutcomeUnknown):
					t.Errorf("op %d (%s), which changed state: %v, want an unknown outcome", i, ops[i].Kind, err)
				case !changes[i] && (errors.Is(err, ErrOutcomeUnknown) || !errors.Is(err, ErrUnavailable)):
					t.Errorf("op %d (%s), which changed nothing: %v, want unavailable (not applied)", i, ops[i].Kind, err)
				}
			}
		})
	}
}
