package sim

import (
	"testing"

	"allot/engine"
)

// caughtWhereSoundPasses runs seeds until the broken component fails one,
// at most 1,000, and runs that seed again with nothing broken, which must
// pass: the failure is the broken component's, not the simulator's.
func caughtWhereSoundPasses(t *testing.T, cfg Config) {
	t.Helper()
	for seed := uint64(1); seed <= 1000; seed++ {
		cfg.Seed = seed
		res := Run(cfg)
		if !res.Failed() {
			continue
		}
		t.Logf("caught at seed %d (%s): %v", seed, res.Durability, res.Violations[0])
		sound := cfg
		sound.Broken = BrokenNone
		if res := Run(sound); res.Failed() {
			t.Fatalf("seed %d fails with nothing broken too: %v\nreplay: %s", seed, res.Violations, res.ReplayCommand())
		}
		return
	}
	t.Fatalf("the broken component went uncaught for 1,000 seeds")
}

// A journal that never makes a new segment's name durable (no directory
// sync after creating or renaming it) loses synced, acknowledged frames
// at a power cut, now that vfs.Mem keeps only the entries of the last
// SyncDir; when it treated every entry as durable at once, this broken
// journal passed every seed.
func TestCatchesASegmentNameNeverSynced(t *testing.T) {
	caughtWhereSoundPasses(t, Config{Ops: 2000, Durability: engine.DurabilityFsync, FaultRate: -1, Broken: BrokenSegmentNameNotSynced})
}

// Recovery that syncs what it replayed without writing it again: after an
// fdatasync failed (EIO, the engine stopped) and the process restarted on
// the same machine, the failed sync's pages, clean in the page cache but
// not on disk, stay off it, and a power cut after more acknowledged ops
// loses them. Needs the failed sync to leave its pages clean (it used to
// leave them dirty, for the next sync to write) and crashes of the process
// alone in fsync runs (every one was a power cut): before both, this
// broken recovery passed every seed.
func TestCatchesRecoveryThatDoesNotRewriteAfterAFailedSync(t *testing.T) {
	caughtWhereSoundPasses(t, Config{Ops: 2000, Durability: engine.DurabilityFsync, Broken: BrokenNoRecoveryRewrite})
}

// Recovery without its sync of the frames it replayed (commit f9373cd):
// a process killed between a frame's write and its fdatasync leaves the
// frame in the page cache; the restart replays it and acknowledges ops
// after it, and a power cut then loses it under them. Every fsync-mode
// crash was a power cut and every crash of the process made the page
// cache durable, so deleting that sync passed every seed. Faults off: the
// kills in an fdatasync and the crashes of the process find it.
func TestCatchesRecoveryThatDoesNotSyncWhatItReplayed(t *testing.T) {
	for _, mode := range []engine.Durability{engine.DurabilityFsync, engine.DurabilityWrite} {
		t.Run(string(mode), func(t *testing.T) {
			caughtWhereSoundPasses(t, Config{Ops: 2000, Durability: mode, FaultRate: -1, Broken: BrokenNoRecoverySync})
		})
	}
}
