package journal

import (
	"errors"
	"slices"
	"testing"

	"allot/vfs"
)

// A segment rotation that fails after closing the full segment (the next
// one cannot be created: a full or read-only disk) leaves no segment open; Close must still return (it used to dereference the nil
// file and panic).
func TestCloseAfterAFailedRotation(t *testing.T) {
	fs := vfs.NewFaulty(vfs.NewMem())
	j, _, _, err := Open(Options{FS: fs, Dir: dir, SegmentBytes: 4096, NoPreallocate: true})
	if err != nil {
		t.Fatal(err)
	}
	ops := genOps(9, 2000)
	fs.FailCreates(true) // the next segment cannot be made
	var werr error
	for i := 0; i < len(ops) && werr == nil; i++ {
		j.Add(&ops[i])
		werr = j.Write()
	}
	if !errors.Is(werr, vfs.ErrInjected) {
		t.Fatalf("want the rotation to fail with the injected error, got %v", werr)
	}
	defer func() {
		if p := recover(); p != nil {
			t.Fatalf("Close after a failed rotation panicked: %v", p)
		}
	}()
	j.Close()
}

// The segment size the engine's documentation promises is the one a
// journal opened with no size uses.
func TestSegmentBytesDefault(t *testing.T) {
	o := Options{Dir: dir}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if o.SegmentBytes != SegmentBytesDefault || SegmentBytesDefault != 16<<20 {
		t.Fatalf("default segment size %d, documented %d", o.SegmentBytes, SegmentBytesDefault)
	}
}

func segmentFiles(t *testing.T, fs vfs.FS) []string {
	t.Helper()
	names, err := fs.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	var segs []string
	for _, n := range names {
		if _, ok := parseName(n, "journal-", ".log"); ok {
			segs = append(segs, n)
		}
	}
	return segs
}

// A crash after a snapshot is written but before the segments it covers
// are removed must not leave those segments behind for good: the next
// Open removes them (it used to skip them, and no later snapshot ever
// looked at them again).
func TestOpenRemovesSegmentsASnapshotCovers(t *testing.T) {
	fs := vfs.NewMem()
	j, _, _ := open(t, fs, 4096)
	ops := genOps(10, 600)
	writeOps(t, j, ops, 10, 1)
	before := segmentFiles(t, fs)
	if len(before) < 3 {
		t.Fatalf("want several segments, got %v", before)
	}
	// The snapshot is written; the process dies before the trim.
	if err := writeSnapshot(fs, dir, &Snapshot{LSN: j.SnapshotLSN(), Rows: stateAfter(ops)}); err != nil {
		t.Fatal(err)
	}
	j.Close()

	j2, st, rec, err := Open(Options{FS: fs, Dir: dir, SegmentBytes: 4096, KeepSnapshots: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer j2.Close()
	if rec.SnapshotLSN != uint64(len(ops)) || !slices.Equal(st.Rows(), stateAfter(ops)) {
		t.Fatalf("recovery %+v", rec)
	}
	// The last segment stays in the journal's list (the next snapshot
	// removes it); those before it are no one's any more.
	after := segmentFiles(t, fs)
	for _, old := range before[:len(before)-1] {
		if slices.Contains(after, old) {
			t.Fatalf("segments after reopening: %v; %s lies wholly in the snapshot and leaks", after, old)
		}
	}
}

// After a failed rotation a further write is an error, not a nil
// dereference (the engine's none-mode flusher wrote its pending frame).
func TestWriteAfterAFailedRotation(t *testing.T) {
	fs := vfs.NewFaulty(vfs.NewMem())
	j, _, _, err := Open(Options{FS: fs, Dir: dir, SegmentBytes: 4096, NoPreallocate: true})
	if err != nil {
		t.Fatal(err)
	}
	ops := genOps(11, 2000)
	fs.FailCreates(true)
	var werr error
	i := 0
	for ; i < len(ops) && werr == nil; i++ {
		j.Add(&ops[i])
		werr = j.Write()
	}
	if werr == nil {
		t.Fatal("the rotation did not fail")
	}
	defer func() {
		if p := recover(); p != nil {
			t.Fatalf("a write after a failed rotation panicked: %v", p)
		}
	}()
	j.Add(&ops[i])
	if err := j.Write(); err == nil {
		t.Fatal("a write after a failed rotation succeeded")
	}
}
