package journal

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"allot/vfs"
)

// In an unsynced journal a segment is allocated, not written, before it
// takes frames (vfs.Allocator), and only its header, size and allocation
// are synced (journal.BrokenSpareNotSynced skips that sync and fails
// this test). The size matters:
// a full segment is synced in the background after the next one took
// frames, and a power cut before that sync can lose every frame page of
// the full segment while the next one's survive. Recovery then finds a
// hole (the next segment starts after ops the full one lost) and keeps
// the prefix, as write mode promises; but only if the full segment is
// still as long as it was made, since the room after its last frame is
// how recovery tells a segment's lost tail from a missing segment (with
// segments as large as before, the setting says how large it was; with
// smaller ones, only its length does).
func TestAnUnsyncedSegmentKeepsItsSizeThroughAPowerCut(t *testing.T) {
	for _, mapped := range []bool{false, true} {
		mem := vfs.NewMem()
		if mapped {
			mem.EnableMapping()
		}
		var fs vfs.FS = mem
		var faulty *vfs.Faulty
		if !mapped {
			faulty = vfs.NewFaulty(mem)
			fs = faulty
		}
		const segBytes = 16 * pageBytes
		j, _, _, err := Open(Options{FS: fs, Dir: dir, SegmentBytes: segBytes, Unsynced: true, Mmap: mapped})
		if err != nil {
			t.Fatal(err)
		}
		var release func(error)
		if faulty != nil {
			_, release = faulty.HoldSyncs("journal-")
		} else {
			// A mapped Mem file is not wrapped: hold the retirement by
			// waiting on it only after the crash is taken.
			release = func(error) {}
		}
		ops := genOps(41, 20000)
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
		for n := i + 50; i < n; i++ {
			j.Add(&ops[i])
			if err := j.Write(); err != nil {
				t.Fatalf("op %d: %v", i, err)
			}
		}
		if mapped {
			// The mapped run cannot hold the background sync; it only
			// checks the spare was handed over mapped.
			if j.mapped == nil {
				t.Fatal("the segment taken from the spare is not mapped")
			}
			release(nil)
			j.Close()
			continue
		}
		first := j.segments[0].name
		// The directory is synced while the full segment's sync is held
		// (a snapshot's rename syncs it too): the new segment's name is
		// durable, the full segment's bytes are not.
		if err := mem.SyncDir(dir); err != nil {
			t.Fatal(err)
		}
		// The power goes before the full segment's sync: its first
		// frames reach the disk and the rest are lost; the new segment's
		// pages all reach the disk.
		// The full segment's disk keeps its bytes up to the end of the
		// first frame that ends past its second page, exactly (no torn
		// frame), and none after.
		buf, err := vfs.ReadFile(mem, dir+"/"+first)
		if err != nil {
			t.Fatal(err)
		}
		end := segmentHeaderSize
		for end < 2*pageBytes {
			_, size, bad, _ := parseFrame(buf[end:])
			if bad != "" {
				t.Fatalf("frame at %d: %s", end, bad)
			}
			end += size
		}
		crashed := mem.CrashPages(func(name string, page int64) int {
			if name != dir+"/"+first {
				return pageBytes
			}
			return max(0, min(pageBytes, end-int(page)*pageBytes))
		})
		release(nil)
		j.Close()
		// Reopened with smaller segments (a changed setting): the room
		// after a segment's last frame is its length past that frame, or
		// what SegmentBytes allows, whichever is more; the length is
		// what must have survived.
		_, st, rec, err := Open(Options{FS: crashed, Dir: dir, SegmentBytes: 2 * pageBytes, Unsynced: true})
		if err != nil {
			t.Fatalf("recovery refused after a power cut before a full segment's sync: %v", err)
		}
		if got := int(rec.LastLSN); got > i || !slices.Equal(st.Rows(), stateAfter(ops[:got])) {
			t.Fatalf("recovered %d ops, or a state that is not theirs", got)
		}
	}
}

// On the real file system a mapped unsynced journal takes each new
// segment from a spare that was mapped, and its pages faulted in, off the
// writer's path; the spare holds its header and zeros, and the ops
// written through several rotations all come back after a reopen.
func TestMappedSparesOnTheRealFileSystem(t *testing.T) {
	d := t.TempDir()
	const segBytes = 16 * pageBytes
	opts := Options{FS: vfs.OS{}, Dir: d, SegmentBytes: segBytes, Unsynced: true, Mmap: true}
	j, _, _, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	f, err := j.preallocate(d + "/probe")
	if err != nil {
		t.Fatal(err)
	}
	b, err := j.mapSpare(f, d+"/probe")
	if err != nil || b == nil {
		t.Fatalf("the spare was not mapped: %v", err)
	}
	if len(b) != segBytes || !slices.Equal(b[:segmentHeaderSize], segmentHeader(modeUnsynced)) || !allZero(b[segmentHeaderSize:]) {
		t.Fatalf("the mapped spare holds %d bytes, header %x: want %d, the header and zeros", len(b), b[:segmentHeaderSize], segBytes)
	}
	closeSpare(spareResult{file: f, mapped: b})
	ops := genOps(43, 6000)
	for i := range ops {
		j.Add(&ops[i])
		if err := j.Write(); err != nil {
			t.Fatalf("op %d: %v", i, err)
		}
	}
	if len(j.segments) < 4 {
		t.Fatalf("%d segments: the ops did not rotate through spares", len(j.segments))
	}
	if j.mapped == nil {
		t.Fatal("the current segment is not mapped")
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	j, st, rec, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if rec.LastLSN != uint64(len(ops)) || !slices.Equal(st.Rows(), stateAfter(ops)) {
		t.Fatalf("recovered %d of %d ops, or a state that is not theirs", rec.LastLSN, len(ops))
	}
}

// Sync makes every written frame durable, in an unsynced journal too,
// where the full segment before the current one is synced in the
// background after a rotation: Sync returned once the current segment was
// synced, and a power cut then lost every op of the full one.
func TestSyncWaitsForTheFullSegmentsSync(t *testing.T) {
	mem := vfs.NewMem()
	fs := vfs.NewFaulty(mem)
	j, _, _, err := Open(Options{FS: fs, Dir: dir, SegmentBytes: 16 * pageBytes, Unsynced: true})
	if err != nil {
		t.Fatal(err)
	}
	held, release := fs.HoldSyncs("journal-")
	defer release(nil)
	ops := genOps(47, 20000)
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
	<-held // the full segment's sync is under way, and held
	synced := make(chan error, 1)
	go func() { synced <- j.Sync() }()
	select {
	case err := <-synced:
		t.Fatalf("Sync returned (%v) while the full segment's sync was held", err)
	case <-time.After(200 * time.Millisecond):
	}
	release(nil)
	if err := <-synced; err != nil {
		t.Fatal(err)
	}
	crashed := mem.CrashPages(func(string, int64) int { return 0 })
	_, st, rec, err := Open(Options{FS: crashed, Dir: dir, SegmentBytes: 16 * pageBytes, Unsynced: true})
	if err != nil {
		t.Fatal(err)
	}
	if int(rec.LastLSN) != i || !slices.Equal(st.Rows(), stateAfter(ops[:i])) {
		t.Fatalf("after Sync and a power cut: recovered %d of %d ops", rec.LastLSN, i)
	}
	j.Close()
}

// A full disk (vfs.Faulty's write budget) fails an unsynced journal's
// spare allocation as it failed its zeros: the journal stops with the
// error, nothing acknowledged past it is lost.
func TestAFullDiskFailsTheAllocation(t *testing.T) {
	fs := vfs.NewFaulty(vfs.NewMem())
	j, _, _, err := Open(Options{FS: fs, Dir: dir, SegmentBytes: 16 * pageBytes, Unsynced: true})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	fs.FailWritesAfter(20 * pageBytes) // room for this segment's frames, not the next one
	ops := genOps(53, 20000)
	var werr error
	for i := 0; i < len(ops) && werr == nil; i++ {
		j.Add(&ops[i])
		werr = j.Write()
	}
	if !errors.Is(werr, vfs.ErrInjected) || !strings.Contains(werr.Error(), "preallocate") || len(j.segments) != 1 {
		t.Fatalf("writes past a full disk: want the next segment's allocation to fail, before it takes a frame; got %v, with %d segments", werr, len(j.segments))
	}
}
