package sim

import (
	"testing"

	"allot/engine"
)

// Recovery that syncs only the segments it replays, not the history kept
// before the newest snapshot for change-stream readers
// (journal.BrokenNoHistorySync): under write and none a full segment is
// synced in the background, and a process that dies first leaves its
// frames in the page cache; the restart's recovery must make them
// durable, or a power cut later leaves the readers a hole. The simulator
// read the history only in fsync runs (under write and none it read from
// the newest snapshot on), so this broken recovery passed 1,000 seeds of
// write and of none runs. Now a recovery's history that was readable must
// be readable after the next crash, whatever its kind.
//
// It needs a crash of the process before the background sync of a full
// segment ran, a snapshot covering that segment already, a restart, and a
// power cut before the segment is retired: which seed finds it varies
// with the goroutines (seeds 238, 305, 422, 452 and 702 in seven runs of
// eight with 5,000 ops; none in 1,000 seeds in the eighth). So this test
// runs up to 5,000 seeds, not caught's 1,000.
func TestCatchesRecoveryThatDoesNotSyncTheHistory(t *testing.T) {
	cfg := Config{Ops: 5000, Durability: engine.DurabilityNone, FaultRate: -1, Broken: BrokenNoHistorySync}
	for seed := uint64(1); seed <= 5000; seed++ {
		cfg.Seed = seed
		res := Run(cfg)
		if !res.Failed() {
			continue
		}
		t.Logf("caught at seed %d: %v", seed, res.Violations[0])
		sound := cfg
		sound.Broken = BrokenNone
		if res := Run(sound); res.Failed() {
			t.Fatalf("seed %d fails with nothing broken too: %v\nreplay: %s", seed, res.Violations, res.ReplayCommand())
		}
		return
	}
	t.Fatalf("the broken recovery went uncaught for 5,000 seeds")
}

// Sound runs of write and none, with crashes of the process before power
// cuts, keep every history op a recovery found readable readable after
// the next crash (the check above), with faults on and off.
func TestAHistorySurvivesTheNextCrash(t *testing.T) {
	for _, d := range []engine.Durability{engine.DurabilityWrite, engine.DurabilityNone} {
		for _, rate := range []float64{-1, 0} {
			for seed := uint64(1); seed <= 60; seed++ {
				res := Run(Config{Seed: seed, Ops: 4000, Durability: d, FaultRate: rate})
				if res.Failed() {
					t.Fatalf("seed %d, %s, faults %v: %v\nreplay: %s", seed, d, rate, res.Violations, res.ReplayCommand())
				}
			}
		}
	}
}
