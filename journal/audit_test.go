package journal

import (
	"errors"
	"path"
	"slices"
	"strings"
	"testing"

	"allot/vfs"
)

// A segment missing from the middle of an unsynced journal (the engine's
// write and none modes) is corruption, as in a synced one: no crash leaves
// it, since a full segment is synced before the one after the next is
// begun. Recovery used to read it as the previous segment's frames lost to
// a power cut, and removed every segment after the gap: ops that were
// written, synced and acknowledged, silently gone.
func TestMissingSegmentOfAnUnsyncedJournalIsCorruption(t *testing.T) {
	fs := vfs.NewMem()
	ops := genOps(31, 3000)
	j, _, _, err := Open(Options{FS: fs, Dir: dir, SegmentBytes: 1 << 13, Unsynced: true})
	if err != nil {
		t.Fatal(err)
	}
	writeOps(t, j, ops, 10, 0)
	if err := j.Close(); err != nil { // synced: every op is durable
		t.Fatal(err)
	}
	segs := segmentFiles(t, fs)
	if len(segs) < 4 {
		t.Fatalf("want >= 4 segments, got %v", segs)
	}
	if err := fs.Remove(path.Join(dir, segs[1])); err != nil {
		t.Fatal(err)
	}
	_, _, rec, err := Open(Options{FS: fs, Dir: dir, SegmentBytes: 1 << 13, Unsynced: true})
	var ce *CorruptionError
	if !errors.As(err, &ce) || !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a missing middle segment of an unsynced journal: recovered %+v, err %v; want a corruption error", rec, err)
	}
	if ce.File != path.Join(dir, segs[2]) || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("the error %v does not name %s and the missing ops", err, segs[2])
	}
	if after := segmentFiles(t, fs); !slices.Equal(after, slices.Delete(slices.Clone(segs), 1, 2)) {
		t.Fatalf("recovery removed segments it then refused: before %v, after %v", segs, after)
	}
}

// Segments follow each other and frames within a segment too, each
// starting where the last ended. Ops that repeat (a segment copied under
// another name, another data directory's segment, a frame written twice)
// are refused; recovery used to skip such frames as if a snapshot covered
// them.
func TestRepeatedOpsAreCorruption(t *testing.T) {
	t.Run("overlapping segment", func(t *testing.T) {
		fs := vfs.NewMem()
		j, _, _ := open(t, fs, 4096)
		writeOps(t, j, genOps(32, 2000), 10, 1)
		j.Close()
		segs := segmentFiles(t, fs)
		if len(segs) < 3 {
			t.Fatalf("want >= 3 segments, got %v", segs)
		}
		b, err := vfs.ReadFile(fs, path.Join(dir, segs[1]))
		if err != nil {
			t.Fatal(err)
		}
		first, _ := parseName(segs[1], "journal-", ".log")
		copied := path.Join(dir, segmentName(first+5))
		f, _ := fs.Create(copied)
		f.Write(b)
		f.Sync()
		f.Close()
		_, _, rec, err := Open(Options{FS: fs, Dir: dir, SegmentBytes: 4096})
		var ce *CorruptionError
		if !errors.As(err, &ce) || ce.File != copied || !strings.Contains(err.Error(), "overlap") {
			t.Fatalf("recovered %+v, err %v; want a corruption error naming %s", rec, err, copied)
		}
	})
	t.Run("frame written twice", func(t *testing.T) {
		fs := vfs.NewMem()
		j, _, _ := open(t, fs, 1<<20)
		ops := genOps(33, 30)
		writeOps(t, j, ops[:20], 10, 1)
		for i := 20; i < 30; i++ {
			j.Add(&ops[i])
		}
		frame := j.Seal()
		for k := 0; k < 2; k++ {
			if err := j.WriteFrame(frame); err != nil {
				t.Fatal(err)
			}
		}
		// A valid frame after the repeated one: not a torn tail.
		writeOps(t, j, genOps(33, 40)[30:], 10, 1)
		j.Close()
		_, _, rec, err := Open(Options{FS: fs, Dir: dir, SegmentBytes: 1 << 20})
		var ce *CorruptionError
		if !errors.As(err, &ce) || ce.File != path.Join(dir, segmentName(1)) || !strings.Contains(err.Error(), "frame starts at op 21, expected 31") {
			t.Fatalf("recovered %+v, err %v; want a corruption error for the repeated frame", rec, err)
		}
	})
}

// A process killed between a frame's write and its fdatasync (fsync mode)
// leaves the frame in the page cache: the next Open replays it, and the
// ops acknowledged after that restart build on it. Recovery must make it
// durable before a new segment follows it; it synced the frames of
// unsynced segments only, so a power cut after the restart lost the
// replayed frame from a segment that is no longer the last, and the next
// Open refused the journal, acknowledged ops and all.
func TestReplayedFramesAreSyncedBeforeNewOnes(t *testing.T) {
	mem := vfs.NewMem()
	ops := genOps(34, 300)
	j, _, _ := open(t, mem, 1<<20)
	writeOps(t, j, ops[:100], 10, 1)
	// Written, never synced: the process is killed here. j is abandoned,
	// not closed (Close would sync).
	writeOps(t, j, ops[100:200], 10, 0)

	j2, _, rec := open(t, mem, 1<<20) // the restart, on the same machine
	if rec.LastLSN != 200 {
		t.Fatalf("the restart recovered %+v, want the 200 written ops", rec)
	}
	writeOps(t, j2, ops[200:], 10, 1) // acknowledged: synced

	crashed := mem.Crash(nil) // then the power goes
	_, st, rec, err := Open(Options{FS: crashed, Dir: dir, SegmentBytes: 1 << 20})
	if err != nil {
		t.Fatalf("after the power cut: %v; ops 201..300 were synced and acknowledged", err)
	}
	if rec.LastLSN != 300 || !slices.Equal(st.Rows(), stateAfter(ops)) {
		t.Fatalf("after the power cut: recovered %+v, want all 300 ops", rec)
	}
}
