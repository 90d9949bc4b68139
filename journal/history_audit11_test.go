package journal

import (
	"slices"
	"testing"

	"allot/vfs"
)

// TestSnapshotsKeepHistoryForReaders: a snapshot leaves the one before it
// and the segments after that (KeepSnapshotsDefault), so a change-stream
// reader that fell up to a snapshot interval behind still finds its
// position; it used to find every op before the newest snapshot gone (a
// relay whose broker was down across one snapshot could never resume).
// Recovery still loads the newest snapshot, and a reopened journal keeps
// the same history and trims it at its next snapshot.
func TestSnapshotsKeepHistoryForReaders(t *testing.T) {
	fs := vfs.NewMem()
	j, _, _ := open(t, fs, 4096)
	ops := genOps(7, 3000)
	snapshot := func(j *Journal, n int) {
		t.Helper()
		if err := j.WriteSnapshot(&Snapshot{LSN: j.SnapshotLSN(), Rows: stateAfter(ops[:n])}); err != nil {
			t.Fatal(err)
		}
	}
	var durable uint64 // the last op written
	readable := func(from uint64) error {
		t.Helper()
		r, err := NewReader(fs, dir, from)
		if err != nil {
			return err
		}
		defer r.Close()
		if from > durable {
			return nil // nothing written there yet
		}
		f, ok, err := r.Next(durable)
		if err != nil || !ok || f.FirstLSN > from || f.LastLSN() < from {
			t.Fatalf("reader from %d: frame %d..%d, %v %v", from, f.FirstLSN, f.LastLSN(), ok, err)
		}
		return nil
	}
	oldestIs := func(want uint64) {
		t.Helper()
		if got, err := Oldest(fs, dir); err != nil || got != want {
			t.Fatalf("Oldest = %d, %v; want %d", got, err, want)
		}
		if want > 1 {
			// The snapshot the oldest op follows is there to start from.
			if lsn, _, err := LoadSnapshot(fs, dir, want-1); err != nil || lsn != want-1 {
				t.Fatalf("the snapshot at %d: %d %v", want-1, lsn, err)
			}
		}
		if err := readable(want); err != nil {
			t.Fatalf("reader from the oldest, %d: %v", want, err)
		}
	}

	writeOps(t, j, ops[:1000], 10, 1)
	durable = 1000
	snapshot(j, 1000)
	oldestIs(1001) // the history before the first snapshot is kept, but no snapshot before it to start from
	writeOps(t, j, ops[1000:2000], 10, 1)
	durable = 2000
	snapshot(j, 2000)
	oldestIs(1001)
	if lsn, _, err := LoadSnapshot(fs, dir, 1500); err != nil || lsn != 1000 {
		t.Fatalf("the older snapshot: %d %v, want 1000", lsn, err)
	}
	writeOps(t, j, ops[2000:2500], 10, 1)
	durable = 2500
	j.Close()

	j2, st, rec := open(t, fs, 4096)
	if rec.SnapshotLSN != 2000 || rec.LastLSN != 2500 || !slices.Equal(st.Rows(), stateAfter(ops[:2500])) {
		t.Fatalf("recovery %+v", rec)
	}
	oldestIs(1001)
	writeOps(t, j2, ops[2500:3000], 10, 1)
	durable = 3000
	snapshot(j2, 3000)
	oldestIs(2001)
	j2.Close()

	// One snapshot kept: the history ends at the newest, as before.
	j3, _, _, err := Open(Options{FS: fs, Dir: dir, SegmentBytes: 4096, KeepSnapshots: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer j3.Close()
	oldestIs(3001)
}

func TestKeepSnapshotsOutOfRange(t *testing.T) {
	for _, k := range []int{-1, KeepSnapshotsMax + 1} {
		if _, _, _, err := Open(Options{FS: vfs.NewMem(), Dir: dir, KeepSnapshots: k}); err == nil {
			t.Errorf("KeepSnapshots %d: opened", k)
		}
	}
}

// TestInstalledSnapshotIsNoHistory: a snapshot installed from elsewhere
// (a cluster node catching up from the shard's stored snapshot) past the
// end of the directory's segments leaves a gap after them: Open removes
// what came before it, and the oldest readable op is the snapshot's next,
// not an op before the gap.
func TestInstalledSnapshotIsNoHistory(t *testing.T) {
	fs := vfs.NewMem()
	j, _, _ := open(t, fs, 4096)
	ops := genOps(9, 3000)
	writeOps(t, j, ops[:1000], 10, 1)
	if err := j.WriteSnapshot(&Snapshot{LSN: 1000, Rows: stateAfter(ops[:1000])}); err != nil {
		t.Fatal(err)
	}
	writeOps(t, j, ops[1000:1500], 10, 1)
	j.Close()
	// Installed: the state after op 3000 of the shard.
	if err := writeSnapshot(fs, dir, &Snapshot{LSN: 3000, Rows: stateAfter(ops)}); err != nil {
		t.Fatal(err)
	}
	j2, st, rec := open(t, fs, 4096)
	defer j2.Close()
	if rec.SnapshotLSN != 3000 || !slices.Equal(st.Rows(), stateAfter(ops)) {
		t.Fatalf("recovery %+v", rec)
	}
	if got, err := Oldest(fs, dir); err != nil || got != 3001 {
		t.Fatalf("Oldest = %d, %v; want 3001 (ops 1501..3000 are in no segment)", got, err)
	}
	if lsn, _, err := LoadSnapshot(fs, dir, 2999); err != nil || lsn != 0 {
		t.Fatalf("a snapshot before the installed one is left: %d %v", lsn, err)
	}
}
