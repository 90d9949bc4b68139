package sim

import (
	"testing"

	"allot/engine"
)

// In write and none modes a preallocated segment's zeros are no longer
// synced before it takes frames, only its header and its size are: a
// power cut there must still recover every run, in both modes.
func TestAnUnsyncedSparesHeaderIsDurable(t *testing.T) {
	for _, d := range []engine.Durability{engine.DurabilityWrite, engine.DurabilityNone} {
		for seed := uint64(1); seed <= 40; seed++ {
			res := Run(Config{Seed: seed, Ops: 2000, Durability: d, FaultRate: -1})
			if res.Failed() {
				t.Fatalf("seed %d, %s: %v\nreplay: %s", seed, d, res.Violations, res.ReplayCommand())
			}
		}
	}
}

// A spare whose header is never synced (journal.BrokenSpareNotSynced)
// can come back from a power cut with frames and no header.
func TestCatchesASpareHeaderNeverSynced(t *testing.T) {
	caughtWhereSoundPasses(t, Config{Ops: 2000, Durability: engine.DurabilityWrite, FaultRate: -1, Broken: BrokenSpareNotSynced})
}
