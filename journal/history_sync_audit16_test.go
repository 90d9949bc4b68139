package journal

import (
	"errors"
	"fmt"
	"path"
	"testing"
	"time"

	"allot/vfs"
)

// TestRecoverySyncsHistorySegments: in an unsynced journal (the engine's
// write and none modes) a full segment is synced in the background; a
// process that dies before that sync leaves the segment's frames in the
// page cache only. When a snapshot already covers them, the segment is
// history (kept for change-stream readers, not replayed), and recovery
// synced only the segments it replayed: a power cut after the restart
// lost the history, and a reader from the oldest op met a hole (TRIMMED)
// although the doc says recovery syncs every segment it keeps.
func TestRecoverySyncsHistorySegments(t *testing.T) {
	t.Run("sound", func(t *testing.T) {
		if err := historyAfterPowerCut(t, BrokenNone); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("broken", func(t *testing.T) {
		err := historyAfterPowerCut(t, BrokenNoHistorySync)
		var trimmed *TrimmedError
		if !errors.As(err, &trimmed) {
			t.Fatalf("with recovery not syncing the history: %v, want a TrimmedError (the test has lost its power)", err)
		}
	})
}

// historyAfterPowerCut returns the error a reader from the oldest op meets
// after a process crash, a restart, and a power cut.
func historyAfterPowerCut(t *testing.T, broken Broken) error {
	ops := genOps(161, 600)
	mem := vfs.NewMem()
	faulty := vfs.NewFaulty(mem)
	opts := Options{FS: faulty, Dir: dir, SegmentBytes: 4096, Unsynced: true, Broken: broken}
	j, _, _, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	// The first segment's background sync never finishes in this process.
	held, release := faulty.HoldSyncs(segmentName(1))
	defer release(nil)
	writeOps(t, j, ops[:100], 10, 0)
	if err := j.WriteSnapshot(&Snapshot{LSN: j.SnapshotLSN(), Rows: stateAfter(ops[:100])}); err != nil {
		t.Fatal(err)
	}
	writeOps(t, j, ops[100:400], 10, 0)
	select {
	case name := <-held:
		if path.Base(name) != segmentName(1) {
			t.Fatalf("held the sync of %s", name)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the first segment was not full, or its sync not begun: the test needs more ops")
	}
	if err := j.WriteSnapshot(&Snapshot{LSN: j.SnapshotLSN(), Rows: stateAfter(ops[:400])}); err != nil {
		t.Fatal(err)
	}
	restart := mem.CrashProcess() // the process dies; the machine does not
	opts.FS = restart
	j2, _, rec, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	if rec.SnapshotLSN != 400 {
		t.Fatalf("recovered %+v, want the snapshot at 400", rec)
	}
	if oldest, err := Oldest(restart, dir); err != nil || oldest != 101 {
		t.Fatalf("Oldest = %d, %v; want 101 (the snapshot before the newest, and the segments after it, are kept)", oldest, err)
	}
	writeOps(t, j2, ops[400:], 10, 1)
	_ = j2 // the power goes with it open

	cut := restart.Crash(nil)
	opts.FS = cut
	j3, _, rec, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer j3.Close()
	if rec.LastLSN != 600 {
		t.Fatalf("after the power cut: recovered %+v, want 600 ops", rec)
	}
	r, err := NewReader(cut, dir, 101)
	if err != nil {
		t.Fatalf("reader from 101 after the power cut: %v", err)
	}
	defer r.Close()
	var next uint64 = 101
	for next <= 600 {
		f, ok, err := r.Next(600)
		if err != nil {
			return fmt.Errorf("reading history from 101 after the power cut, at op %d: %w (recovery did not sync the history segments it kept)", next, err)
		}
		if !ok {
			t.Fatalf("the reader ended at op %d, want 600", next-1)
		}
		if f.FirstLSN > next || f.LastLSN() < next {
			t.Fatalf("frame from %d, want %d", f.FirstLSN, next)
		}
		next = f.LastLSN() + 1
	}
	return nil
}
