package journal

import (
	"errors"
	"strconv"
	"testing"

	"allot/inventory"
	"allot/vfs"
)

// A reader sees every frame in LSN order across segment rotations, never
// past the limit it is given, from any starting op.
func TestReaderFollowsSegments(t *testing.T) {
	fs := vfs.NewMem()
	j, _, _, err := Open(Options{FS: fs, Dir: "d", SegmentBytes: 4096, KeepSnapshots: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	r, err := NewReader(fs, "d", 1)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var next uint64 = 1
	read := func(limit uint64) {
		t.Helper()
		for {
			f, ok, err := r.Next(limit)
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				break
			}
			if f.FirstLSN != next || f.LastLSN() > limit {
				t.Fatalf("frame %d..%d, expected to start at %d, limit %d", f.FirstLSN, f.LastLSN(), next, limit)
			}
			if f.Stamp != int64(f.FirstLSN)*10 {
				t.Fatalf("frame %d: stamp %d", f.FirstLSN, f.Stamp)
			}
			d := inventory.NewDecoder()
			d.Reset(f.Payload)
			var op inventory.Op
			for k := 0; k < f.Count; k++ {
				if err := d.Op(&op); err != nil || op.Key.SKU != "s"+strconv.FormatUint(next, 10) {
					t.Fatalf("op %d: %v %+v", next, err, op)
				}
				next++
			}
		}
	}
	for i := 0; i < 300; i++ {
		j.SetStamp(int64(j.NextLSN()) * 10)
		for k := 0; k <= i%3; k++ {
			op := inventory.Stock(inventory.RowKey{SKU: "s" + strconv.FormatUint(j.NextLSN(), 10), Warehouse: "w", Condition: "c", Source: "x"}, 1, 1)
			j.Add(&op)
		}
		frame := j.Seal()
		if err := j.WriteFrame(frame); err != nil {
			t.Fatal(err)
		}
		if i%7 == 0 {
			read(FrameLastLSN(frame) - 1) // the last frame is held back
			read(FrameLastLSN(frame))
		}
	}
	read(j.NextLSN() - 1)
	if next != j.NextLSN() {
		t.Fatalf("read up to %d, the journal has %d", next-1, j.NextLSN()-1)
	}
	if len(j.segments) < 5 {
		t.Fatalf("only %d segments: the test wants rotations", len(j.segments))
	}
	// From the middle of a frame: the frame that holds it comes first.
	r2, err := NewReader(fs, "d", 200)
	if err != nil {
		t.Fatal(err)
	}
	f, ok, err := r2.Next(j.NextLSN() - 1)
	if err != nil || !ok || f.FirstLSN > 200 || f.LastLSN() < 200 {
		t.Fatalf("reader from 200: frame %d..%d, %v %v", f.FirstLSN, f.LastLSN(), ok, err)
	}
	// Trimmed: a snapshot at 300 removes the segments before it.
	if err := j.WriteSnapshot(&Snapshot{LSN: 300}); err != nil {
		t.Fatal(err)
	}
	_, err = NewReader(fs, "d", 5)
	var te *TrimmedError
	if !errors.As(err, &te) || te.Oldest != 301 || !errors.Is(err, ErrTrimmed) {
		t.Fatalf("reader from 5 after trimming: %v", err)
	}
	if o, _ := Oldest(fs, "d"); o != 301 {
		t.Fatalf("Oldest = %d, want 301", o)
	}
	if lsn, _, err := LoadSnapshot(fs, "d", 299); err != nil || lsn != 0 {
		t.Fatalf("LoadSnapshot at most 299: %d %v, want none", lsn, err)
	}
	if lsn, _, err := LoadSnapshot(fs, "d", 1000); err != nil || lsn != 300 {
		t.Fatalf("LoadSnapshot at most 1000: %d %v, want 300", lsn, err)
	}
}
