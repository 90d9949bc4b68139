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
// power cut before the segment is retired. Which seed found it used to
// vary with the goroutines (the journal's sync raced the crash): seeds
// 153 to 1,054 in runs of up to 5,000, and none in 5,000 under go test
// -race. Now the seed places that sync against each crash of the process
// (runner.placeRetirement), and the engine keeps eight snapshots
// (Config.keepSnapshots), so that the history stays until a power cut
// comes: each of these seeds catches it in a run of a few hundred
// milliseconds, with the scheduler left only the snapshots' goroutine to
// decide (whether one just started is on the disk at a crash; Package
// sim, Determinism), which changes the run of a seed now and then. So the
// test takes the first of them that catches it, and the sound journal
// must pass every one.
var historySyncSeeds = []uint64{25, 182, 238, 60, 113, 186, 150}

func TestCatchesRecoveryThatDoesNotSyncTheHistory(t *testing.T) {
	cfg := Config{Ops: 5000, Durability: engine.DurabilityNone, FaultRate: -1, Broken: BrokenNoHistorySync, keepSnapshots: 8}
	caught := uint64(0)
	for _, seed := range historySyncSeeds {
		cfg.Seed = seed
		res := Run(cfg)
		if !res.Failed() {
			t.Logf("seed %d did not catch it (%d crashes of the process before a retirement's sync)", seed, res.RetirementsCut)
			continue
		}
		t.Logf("caught at seed %d: %v", seed, res.Violations[0])
		caught = seed
		break
	}
	if caught == 0 {
		t.Fatalf("the broken recovery went uncaught at seeds %v", historySyncSeeds)
	}
	sound := cfg
	sound.Broken = BrokenNone
	for _, seed := range historySyncSeeds {
		sound.Seed = seed
		if res := Run(sound); res.Failed() {
			t.Fatalf("seed %d fails with nothing broken too: %v\nreplay: %s", seed, res.Violations, res.ReplayCommand())
		}
	}
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
