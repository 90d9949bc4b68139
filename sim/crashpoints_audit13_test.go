package sim

import (
	"strings"
	"testing"

	"allot/engine"
)

// With faults on, the process also dies at the steps of writing a snapshot
// (create, write and sync of its temporary file, the rename, the directory
// sync), of retiring segments (the removal of the segments and snapshots
// a snapshot covers, the directory sync after it; in write and none modes
// the sync and unmap of a full segment) and at any rename or directory
// sync, and the machine may go down with it. Every recovery after one
// loses no acknowledged op. Before, crashes came only between requests and
// in an fdatasync: the background goroutines that write snapshots and
// retire segments always finished or had not begun. Each step is aimed at
// in turn (stepKillOnly), since the later steps of a snapshot are reached
// only when the process survived the earlier ones.
func TestCrashesAtEachStepOfSnapshotsAndRetirement(t *testing.T) {
	for _, c := range []struct {
		step string
		mode engine.Durability
	}{
		{"create snapshot.tmp", engine.DurabilityFsync}, {"write snapshot.tmp", engine.DurabilityFsync},
		{"sync snapshot.tmp", engine.DurabilityFsync}, {"rename snapshot.tmp", engine.DurabilityFsync},
		{"remove snapshot", engine.DurabilityFsync}, {"remove segment", engine.DurabilityFsync},
		{"syncdir data", engine.DurabilityFsync}, {"rename segment.spare", engine.DurabilityFsync},
		{"remove segment", engine.DurabilityWrite}, {"sync segment", engine.DurabilityWrite},
		{"unmap segment", engine.DurabilityWrite}, {"syncdir data", engine.DurabilityWrite},
	} {
		killed := 0
		for seed := uint64(1); seed <= 40 && killed < 3; seed++ {
			res := Run(Config{Seed: seed, Ops: 2000, Durability: c.mode, StepKillRate: 0.5, stepKillOnly: c.step})
			if res.Failed() {
				t.Fatalf("seed %d (%s), crashes at %q: %v", seed, c.mode, c.step, res.Violations)
			}
			for _, s := range res.StepsKilled {
				op, name, _ := strings.Cut(s, " ")
				if stepKind(op, name) != c.step {
					t.Fatalf("seed %d: aimed at %q, died at %q", seed, c.step, s)
				}
				killed++
			}
		}
		if killed == 0 {
			t.Errorf("%s: no crash at %q in 40 runs", c.mode, c.step)
		}
	}
}

// A snapshot written under its final name, not renamed into place: a
// crash while it is written leaves the newest snapshot torn, and recovery
// refuses it as corrupt. A crash between requests finds it only when it
// falls while the snapshot's goroutine writes (3 seeds in 300 with the
// crash points off); a crash point inside the write, within a few seeds.
func TestCatchesASnapshotWrittenInPlace(t *testing.T) {
	caughtWhereSoundPasses(t, Config{Ops: 2000, Durability: engine.DurabilityWrite, Broken: BrokenSnapshotInPlace})
}
