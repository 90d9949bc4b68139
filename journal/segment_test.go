package journal

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math/rand/v2"
	"path"
	"slices"
	"strings"
	"testing"

	"allot/inventory"
	"allot/vfs"
)

const pageBytes = 4096

// frameEnds returns the end offset of every valid frame of a segment, and
// the LSN of each frame's last op.
func frameEnds(t *testing.T, buf []byte) (ends []int, lastLSNs []uint64) {
	t.Helper()
	_, off, bad, _ := parseSegmentHeader(buf)
	if bad != "" {
		t.Fatal(bad)
	}
	for off < len(buf) {
		h, size, bad, _ := parseFrame(buf[off:])
		if bad != "" {
			break
		}
		off += size
		ends = append(ends, off)
		lastLSNs = append(lastLSNs, h.firstLSN+uint64(h.count)-1)
	}
	return ends, lastLSNs
}

// zeroPage overwrites page p of name with zeros, durably: the page the
// kernel never wrote back before the power went.
func zeroPage(t *testing.T, fs vfs.FS, name string, p int) {
	t.Helper()
	f, err := fs.OpenAppend(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(make([]byte, pageBytes), int64(p*pageBytes)); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
}

// holeImage writes ops in frames of 5 into one 64 KiB segment, syncing
// after the first synced ops, and then loses one page of the unsynced part
// while a later page, holding frames written after it, survives: the image
// a power cut leaves when the kernel wrote pages back out of order. It
// returns the file system, the ops, how many were synced and the LSN of
// the last frame wholly before the lost page.
func holeImage(t *testing.T, unsynced bool) (*vfs.Mem, []inventory.Op, int, uint64) {
	t.Helper()
	fs := vfs.NewMem()
	ops := genOps(21, 1500)
	j, _, _, err := Open(Options{FS: fs, Dir: dir, SegmentBytes: 1 << 16, Unsynced: unsynced})
	if err != nil {
		t.Fatal(err)
	}
	const synced = 200
	writeOps(t, j, ops[:synced], 5, 0)
	if err := j.Sync(); err != nil {
		t.Fatal(err)
	}
	writeOps(t, j, ops[synced:], 5, 0)
	seg := path.Join(dir, segmentName(1))
	buf, err := vfs.ReadFile(fs, seg)
	if err != nil {
		t.Fatal(err)
	}
	ends, lasts := frameEnds(t, buf)
	syncedEnd := ends[synced/5-1]
	lost := syncedEnd/pageBytes + 2 // a page well after the synced frames
	if ends[len(ends)-1] < (lost+2)*pageBytes {
		t.Fatalf("the frames end at %d: too few for a hole at page %d with a page after it", ends[len(ends)-1], lost)
	}
	var before uint64
	for k, end := range ends {
		if end <= lost*pageBytes {
			before = lasts[k]
		}
	}
	zeroPage(t, fs, seg, lost)
	return fs, ops, synced, before
}

// A power cut under write mode: the kernel wrote a later page of the
// mapped segment back and lost an earlier one. Recovery cuts the segment
// at the hole, keeps every op that was synced and every frame before the
// hole, and does not refuse the journal as corrupt.
func TestUnsyncedSegmentIsCutAtAHole(t *testing.T) {
	fs, ops, synced, before := holeImage(t, true)
	j, st, rec, err := Open(Options{FS: fs, Dir: dir, SegmentBytes: 1 << 16, Unsynced: true})
	if err != nil {
		t.Fatalf("recovery refused a write-mode segment with an unsynced hole: %v", err)
	}
	defer j.Close()
	if rec.LastLSN < uint64(synced) {
		t.Fatalf("recovered to op %d; ops up to %d were synced", rec.LastLSN, synced)
	}
	if rec.LastLSN != before {
		t.Fatalf("recovered to op %d, want %d: the last op before the hole", rec.LastLSN, before)
	}
	if rec.TailCut == 0 {
		t.Fatalf("recovery %+v does not report the cut", rec)
	}
	if !slices.Equal(st.Rows(), stateAfter(ops[:before])) {
		t.Fatal("the state after the cut is not the state after its ops")
	}
}

// The same image in a segment written in fsync mode is corruption: its
// frames after the hole were synced, hence acknowledged.
func TestSyncedSegmentWithAHoleIsRefused(t *testing.T) {
	fs, _, _, _ := holeImage(t, false)
	_, _, _, err := Open(Options{FS: fs, Dir: dir, SegmentBytes: 1 << 16})
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "a valid frame follows") {
		t.Fatalf("want a corruption error for a hole before valid frames in a synced segment, got %v", err)
	}
}

// A hole in an unsynced segment that is not the last: the segments after
// it are dropped when they are unsynced too, and the journal is refused
// when a synced one follows (its frames were acknowledged as durable).
func TestHoleBeforeLaterSegments(t *testing.T) {
	for _, tc := range []struct {
		name        string
		laterSynced bool
		toEnd       bool // whole frames lost to the segment's end: it reads as zeros
	}{{"later unsynced", false, false}, {"later synced", true, false}, {"hole to the end", false, true}} {
		t.Run(tc.name, func(t *testing.T) {
			fs := vfs.NewMem()
			ops := genOps(22, 3000)
			j, _, _, err := Open(Options{FS: fs, Dir: dir, SegmentBytes: 3 * pageBytes, Unsynced: true})
			if err != nil {
				t.Fatal(err)
			}
			writeOps(t, j, ops[:2000], 5, 0)
			j.Close()
			j, _, _, err = Open(Options{FS: fs, Dir: dir, SegmentBytes: 3 * pageBytes, Unsynced: !tc.laterSynced})
			if err != nil {
				t.Fatal(err)
			}
			writeOps(t, j, ops[2000:], 5, 1)
			j.Close()
			first := path.Join(dir, segmentName(1))
			buf, _ := vfs.ReadFile(fs, first)
			ends, lasts := frameEnds(t, buf)
			if ends[len(ends)-1] <= 2*pageBytes {
				t.Fatalf("the first segment's frames end at %d, want them on its third page", ends[len(ends)-1])
			}
			var before uint64
			boundary := 0
			for k, end := range ends {
				if end <= pageBytes {
					before, boundary = lasts[k], end
				}
			}
			if tc.toEnd {
				f, _ := fs.OpenAppend(first)
				f.WriteAt(make([]byte, len(buf)-boundary), int64(boundary))
				f.Sync()
				f.Close()
			} else {
				zeroPage(t, fs, first, 1)
			}
			j, st, rec, err := Open(Options{FS: fs, Dir: dir, SegmentBytes: 3 * pageBytes, Unsynced: true})
			if tc.laterSynced {
				if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "a synced segment follows") {
					t.Fatalf("want a corruption error naming the synced segment after the hole, got %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("recovery refused: %v", err)
			}
			defer j.Close()
			if rec.LastLSN != before || !slices.Equal(st.Rows(), stateAfter(ops[:before])) {
				t.Fatalf("recovered to op %d, want %d and the state after it", rec.LastLSN, before)
			}
			for _, n := range fs.Names() {
				if lsn, ok := parseName(path.Base(n), "journal-", ".log"); ok && lsn != 1 && lsn != before+1 {
					t.Fatalf("segment %s, after the hole, was kept", n)
				}
			}
		})
	}
}

// A segment of an earlier release has no header: it is read from offset 0
// and strictly, as a synced one (compat_test.go reads a whole data dir of
// the first release). A header of an unknown version is refused, not read
// as frames.
func TestSegmentHeaderVersions(t *testing.T) {
	if mode, start, bad, _ := parseSegmentHeader(make([]byte, 64)); bad != "" || mode != modeSynced || start != 0 {
		t.Fatalf("zeros: mode %v start %d %q, want an old segment read strictly from 0", mode, start, bad)
	}
	fs := vfs.NewMem()
	j, _, _ := open(t, fs, 1<<16)
	writeOps(t, j, genOps(23, 20), 10, 1)
	j.Close()
	seg := path.Join(dir, segmentName(1))
	buf, _ := vfs.ReadFile(fs, seg)
	hdr := slices.Clone(buf[:segmentHeaderSize])
	binary.LittleEndian.PutUint16(hdr[8:], segmentHeaderVersion+1)
	binary.LittleEndian.PutUint32(hdr[4:], crc32.Checksum(hdr[8:], castagnoli))
	f, _ := fs.OpenAppend(seg)
	f.WriteAt(hdr, 0)
	f.Sync()
	f.Close()
	_, _, _, err := Open(Options{FS: fs, Dir: dir, SegmentBytes: 1 << 16})
	if !errors.Is(err, ErrUnknownVersion) || !strings.Contains(err.Error(), "segment header version 2") {
		t.Fatalf("want an unknown-version error for the segment header, got %v", err)
	}
}

// A mapped unsynced journal (the engine's write mode) on a file system
// that models the page cache: power cuts that write back a random subset
// of the dirty pages, torn or whole, never make recovery refuse; it keeps
// every synced op and a prefix of the rest.
func TestMappedUnsyncedJournalSurvivesPowerCuts(t *testing.T) {
	cuts := 0
	for seed := uint64(1); seed <= 40; seed++ {
		rng := rand.New(rand.NewPCG(seed, 11))
		fs := vfs.NewMem()
		fs.EnableMapping()
		ops := genOps(seed, 2000)
		j, _, _, err := Open(Options{FS: fs, Dir: dir, SegmentBytes: 16 * pageBytes, Unsynced: true, Mmap: true})
		if err != nil {
			t.Fatal(err)
		}
		if j.mapped == nil {
			t.Fatal("the segment is not mapped")
		}
		synced := writeInChunks(t, j, ops, rng, 20, 50)
		j.waitRetired() // the background syncs of full segments are done
		crashed := fs.CrashPages(func(string, int64) int {
			return []int{0, pageBytes, rng.IntN(pageBytes)}[rng.IntN(3)]
		})
		_, st, rec, err := Open(Options{FS: crashed, Dir: dir, SegmentBytes: 16 * pageBytes, Unsynced: true, Mmap: true})
		if err != nil {
			t.Fatalf("seed %d: recovery refused: %v", seed, err)
		}
		if rec.TailCut > 0 {
			cuts++
		}
		if got := int(rec.LastLSN); got < synced || !slices.Equal(st.Rows(), stateAfter(ops[:got])) {
			t.Fatalf("seed %d: recovered %d ops (%d synced), or a state that is not theirs", seed, got, synced)
		}
	}
	if cuts < 10 {
		t.Fatalf("only %d of 40 power cuts left a hole to cut: the test does not test it", cuts)
	}
}
