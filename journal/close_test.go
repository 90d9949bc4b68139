package journal

import (
	"errors"
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
