package sim

import (
	"flag"
	"math/rand/v2"
	"testing"
	"time"

	"allot/engine"
)

var seedsFlag = flag.Int("sim.seeds", 200, "seeds the fixed-seed test runs")

// TestFixedSeedsAndARandomOne runs seeds 1..N and one random seed (printed),
// every durability, with faults and crashes.
func TestFixedSeedsAndARandomOne(t *testing.T) {
	random := rand.Uint64()
	t.Logf("random seed %d (replay: go run ./cmd/allot sim --seeds 1 --seed %d --ops 2000)", random, random)
	seeds := []uint64{random}
	for s := 1; s <= *seedsFlag; s++ {
		seeds = append(seeds, uint64(s))
	}
	start := time.Now()
	ops, acked, crashes, faults := 0, 0, 0, 0
	for _, seed := range seeds {
		res := Run(Config{Seed: seed, Ops: 2000})
		ops, acked, crashes, faults = ops+res.Ops, acked+res.Acked, crashes+res.Crashes, faults+res.Faults
		if res.Failed() {
			t.Fatalf("seed %d (%s): %v\nreplay: %s", seed, res.Durability, res.Violations, res.ReplayCommand())
		}
	}
	t.Logf("%d seeds, %d simulated ops (%d acknowledged), %d crashes, %d injected faults in %v: %.0f ops/s",
		len(seeds), ops, acked, crashes, faults, time.Since(start).Round(time.Millisecond), float64(ops)/time.Since(start).Seconds())
	if crashes < len(seeds) || faults == 0 {
		t.Fatalf("%d crashes and %d faults in %d seeds: the runs did not test recovery", crashes, faults, len(seeds))
	}
}

// caught runs seeds until one fails, at most 1,000.
func caught(t *testing.T, cfg Config) {
	t.Helper()
	for seed := uint64(1); seed <= 1000; seed++ {
		cfg.Seed = seed
		if res := Run(cfg); res.Failed() {
			t.Logf("caught at seed %d: %v", seed, res.Violations[0])
			return
		}
	}
	t.Fatalf("the broken component went uncaught for 1,000 seeds")
}

// The simulator's power: each broken component is caught within 1,000
// seeds.
func TestCatchesAnEngineThatAcksBeforeSync(t *testing.T) {
	caught(t, Config{Ops: 2000, Durability: engine.DurabilityFsync, FaultRate: -1, Broken: BrokenLyingSync})
}

func TestCatchesADiskThatLosesSyncedData(t *testing.T) {
	caught(t, Config{Ops: 2000, Durability: engine.DurabilityFsync, FaultRate: -1, Broken: BrokenLosesSynced})
}

func TestCatchesApplyBeforeJournalAppend(t *testing.T) {
	caught(t, Config{Ops: 500, Durability: engine.DurabilityWrite, FaultRate: -1, Broken: BrokenLateAppend})
}

func TestCatchesASnapshotWithoutTheCatalog(t *testing.T) {
	caught(t, Config{Ops: 4000, Durability: engine.DurabilityWrite, FaultRate: -1, Broken: BrokenSnapshotWithoutCatalog})
}

func TestCatchesRecoveryThatKeepsATornTail(t *testing.T) {
	caught(t, Config{Ops: 1000, Durability: engine.DurabilityWrite, FaultRate: -1, Broken: BrokenKeepTornTail})
}

// Recovery that replays under the default window, not the shortest: an
// engine reopened with a longer window than its ops ran under (the
// simulator draws one at each open) takes a hold id or key reused past the
// old window for a repeat, and refuses its own journal.
func TestCatchesReplayUnderALongerRetention(t *testing.T) {
	caught(t, Config{Ops: 2000, Durability: engine.DurabilityWrite, FaultRate: -1, Broken: BrokenReplayLongRetention})
}
