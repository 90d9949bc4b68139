package journal

import (
	"slices"
	"testing"

	"allot/vfs"
)

// A segment's frames are synced, but its name is durable only once the
// directory is synced too (vfs.Mem models a namespace a power cut reverts
// to the last SyncDir). The journal syncs the directory after each new
// segment; a journal that skips it (BrokenSegmentNameNotSynced) loses
// every synced, acknowledged op of the segments it made, at the first
// power cut. Before vfs.Mem modelled the namespace, the broken journal
// passed this test.
func TestSegmentNamesSurviveAPowerCut(t *testing.T) {
	ops := genOps(111, 2000)
	for _, broken := range []Broken{BrokenNone, BrokenSegmentNameNotSynced} {
		mem := vfs.NewMem()
		j, _, _, err := Open(Options{FS: mem, Dir: dir, SegmentBytes: 4096, Broken: broken})
		if err != nil {
			t.Fatal(err)
		}
		writeOps(t, j, ops, 10, 1) // every frame synced: acknowledged
		if n := len(segmentFiles(t, mem)); n < 3 {
			t.Fatalf("want rotations, got %d segments", n)
		}
		_, st, rec, err := Open(Options{FS: mem.Crash(nil), Dir: dir, SegmentBytes: 4096})
		lost := err != nil || rec.LastLSN != uint64(len(ops)) || !slices.Equal(st.Rows(), stateAfter(ops))
		switch {
		case broken == BrokenNone && lost:
			t.Fatalf("after a power cut: recovered %+v, err %v; want all %d synced ops", rec, err, len(ops))
		case broken != BrokenNone && !lost:
			t.Fatalf("a journal that never syncs its directory kept all %d ops across a power cut: the namespace is not modelled", len(ops))
		case broken != BrokenNone:
			t.Logf("with the directory sync skipped a power cut kept %d of %d synced ops (err %v)", rec.LastLSN, len(ops), err)
		}
	}
}
