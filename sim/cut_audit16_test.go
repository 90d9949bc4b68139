package sim

import (
	"testing"

	"allot/engine"
)

// In fsync mode a frame open for cutAfterMS while a hold comes due is
// closed aside for one stamped now (engine.cutLocked, behind a slow
// fdatasync). The simulator moved its clock only between windows, and
// every fsync window ended with a flush, so no batch ever found the open
// frame stamped 50 ms behind the clock: the path never ran, and the
// model had no rule for it. Now the clock also moves between the
// requests of a window, as it does while a flush's fdatasync runs, and
// the model closes frames aside where the engine does: every journaled
// stamp and reply is held to it.
func TestFsyncRunsCloseFramesAside(t *testing.T) {
	cuts := 0
	for seed := uint64(1); seed <= 60; seed++ {
		for _, rate := range []float64{-1, 0} {
			res := Run(Config{Seed: seed, Ops: 2000, Durability: engine.DurabilityFsync, FaultRate: rate})
			if res.Failed() {
				t.Fatalf("seed %d, faults %v: %v\nreplay: %s", seed, rate, res.Violations, res.ReplayCommand())
			}
			cuts += res.Cuts
		}
	}
	if cuts == 0 {
		t.Fatalf("no frame was closed aside in 120 fsync runs: the simulator never reaches engine.cutLocked")
	}
	t.Logf("%d frames closed aside", cuts)
}

// The model's rule for closing a frame aside has power: a model without
// it (as an engine without engine.cutLocked would be) disagrees with the
// engine's stamps and replies within a few seeds, faults off.
func TestCatchesAModelThatNeverClosesAFrameAside(t *testing.T) {
	for seed := uint64(1); seed <= 100; seed++ {
		res := Run(Config{Seed: seed, Ops: 2000, Durability: engine.DurabilityFsync, FaultRate: -1, modelNoCut: true})
		if res.Failed() {
			t.Logf("caught at seed %d: %.200s", seed, res.Violations[0])
			return
		}
	}
	t.Fatalf("a model that never closes a frame aside passed 100 fsync seeds: the cuts are unchecked")
}
