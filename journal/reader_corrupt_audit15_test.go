package journal

import (
	"errors"
	"strconv"
	"testing"

	"allot/inventory"
	"allot/vfs"
)

// TestReaderCallsADamagedSyncedSegmentCorrupt: a synced (fsync mode)
// segment kept as history was synced before the next one took a frame, so
// a frame missing in it, with a later segment and a snapshot after it, is
// damage on disk: ErrCorrupt, never a *TrimmedError (a consumer told
// "trimmed" resyncs and goes on, and the damage goes unsaid). Only an
// unsynced segment's missing frames are ops a power cut took.
func TestReaderCallsADamagedSyncedSegmentCorrupt(t *testing.T) {
	fs := vfs.NewMem()
	j, _, _, err := Open(Options{FS: fs, Dir: "d", SegmentBytes: 4096, KeepSnapshots: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	for i := 0; i < 300; i++ {
		j.SetStamp(int64(i))
		op := inventory.Stock(inventory.RowKey{SKU: "s" + strconv.Itoa(i), Warehouse: "w", Condition: "c", Source: "x"}, 1, 1)
		j.Add(&op)
		if err := j.Write(); err != nil {
			t.Fatal(err)
		}
		if i == 50 || i == 250 {
			if err := j.Sync(); err != nil {
				t.Fatal(err)
			}
			if err := j.WriteSnapshot(&Snapshot{LSN: j.NextLSN() - 1}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := j.Sync(); err != nil {
		t.Fatal(err)
	}
	// Damage the segment that holds op 150 (history between the two
	// snapshots): zero the segment from op 150's frame on.
	r, err := NewReader(fs, "d", 150)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := r.Next(j.NextLSN() - 1); !ok || err != nil {
		t.Fatalf("reading op 150 before the damage: %v %v", ok, err)
	}
	name, off := r.fileName, r.off
	r.Close()
	f, err := fs.OpenWrite("d/" + name)
	if err != nil {
		t.Fatal(err)
	}
	size, _ := f.Size()
	if _, err := f.WriteAt(make([]byte, size-off), off); err != nil {
		t.Fatal(err)
	}
	f.Close()

	r, err = NewReader(fs, "d", 150)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for {
		_, ok, err := r.Next(j.NextLSN() - 1)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) || errors.Is(err, ErrTrimmed) {
				t.Fatalf("a damaged synced segment: %v; want ErrCorrupt, not trimmed", err)
			}
			return
		}
		if !ok {
			t.Fatal("read to the end across a damaged segment")
		}
	}
}
