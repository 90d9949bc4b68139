package journal

import (
	"errors"
	"strings"
	"testing"

	"allot/vfs"
)

// An unsynced journal syncs a full segment in the background
// (startSegment); if that fdatasync fails, the writer must hear of it: the
// next write (at the latest the next rotation) and Close fail with the
// segment's name, so that the engine stops acknowledging.
func TestFailedBackgroundSyncFailsTheJournal(t *testing.T) {
	fs := vfs.NewFaulty(vfs.NewMem())
	j, _, _, err := Open(Options{FS: fs, Dir: dir, SegmentBytes: 4096, Unsynced: true})
	if err != nil {
		t.Fatal(err)
	}
	held, release := fs.HoldSyncs("journal-")
	defer release(nil)
	ops := genOps(31, 5000)
	i := 0
	for ; i < len(ops) && len(j.segments) < 2; i++ {
		j.Add(&ops[i])
		if err := j.Write(); err != nil {
			t.Fatalf("op %d: %v", i, err)
		}
	}
	if len(j.segments) < 2 {
		t.Fatal("the ops never filled a segment")
	}
	<-held // the full segment's sync is under way
	release(vfs.ErrInjected)
	var werr error
	for ; i < len(ops) && werr == nil; i++ {
		j.Add(&ops[i])
		werr = j.Write()
	}
	if !errors.Is(werr, vfs.ErrInjected) || !strings.Contains(werr.Error(), "fdatasync full segment journal-00000000000000000001.log") {
		t.Fatalf("want the failed background sync of the first segment, got %v", werr)
	}
	if err := j.Close(); !errors.Is(err, vfs.ErrInjected) {
		t.Fatalf("close after a failed background sync: %v", err)
	}
}
