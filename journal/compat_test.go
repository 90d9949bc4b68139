package journal

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path"
	"slices"
	"strings"
	"testing"

	"allot/inventory"
	"allot/vfs"
)

// testdata/v1/data was written by the first release (journal frames and a
// snapshot of format version 1, made by engine.Open with 4 KiB segments and
// a snapshot every 40 ops: 18 stocks, 60 captures, 30 releases);
// testdata/v1/rows.txt is what that release read back before closing. This
// release must recover the same rows from it, and keep them after writing
// version 2 frames and a version 2 snapshot behind the old ones.
func TestRecoversFirstReleaseDataDir(t *testing.T) {
	want := readRowsFile(t, "testdata/v1/rows.txt")
	dir := t.TempDir()
	names, err := os.ReadDir("testdata/v1/data")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		b, err := os.ReadFile(path.Join("testdata/v1/data", n.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path.Join(dir, n.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	j, st, rec, err := Open(Options{FS: vfs.OS{}, Dir: dir, SegmentBytes: 4096})
	if err != nil {
		t.Fatal(err)
	}
	if rec.SnapshotLSN == 0 || rec.Replayed == 0 {
		t.Fatalf("recovery %+v: want a version 1 snapshot and version 1 frames replayed", rec)
	}
	if got := st.Rows(); !slices.Equal(got, want) {
		t.Fatalf("recovered rows differ from what the first release read:\n got %v\nwant %v", got, want)
	}
	// Append in the current format, snapshot, append more, reopen.
	g := inventory.GroupKey{SKU: "sku-1", Condition: "new", Source: "supplier"}
	st.SetTime(1_700_000_000_000)
	j.SetStamp(st.Now())
	for _, op := range []inventory.Op{inventory.Capture(g, 1), inventory.Hold("h", 60_000, []inventory.Demand{{Group: g, N: 2}})} {
		if res := st.Apply(&op, nil); !res.Changed {
			t.Fatalf("%s: %+v", op.Kind, res)
		}
		j.Add(&op)
	}
	if err := j.Write(); err != nil {
		t.Fatal(err)
	}
	if err := j.WriteSnapshot(&Snapshot{LSN: j.SnapshotLSN(), Rows: st.Rows(), Sections: st.Sections()}); err != nil {
		t.Fatal(err)
	}
	op := inventory.Confirm("h")
	st.Apply(&op, nil)
	j.Add(&op)
	if err := j.Write(); err != nil {
		t.Fatal(err)
	}
	if err := j.Sync(); err != nil {
		t.Fatal(err)
	}
	j.Close()
	_, st2, _, err := Open(Options{FS: vfs.OS{}, Dir: dir, SegmentBytes: 4096})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(st2.Rows(), st.Rows()) || !slices.EqualFunc(st2.Sections(), st.Sections(), func(a, b inventory.Section) bool {
		return a.Tag == b.Tag && string(a.Bytes) == string(b.Bytes)
	}) {
		t.Fatal("state after reopening differs")
	}
	get := inventory.HoldGet("h")
	if res := st2.Apply(&get, nil); res.State != inventory.HoldConfirmed {
		t.Fatalf("hold after reopening: %+v", res)
	}
}

func readRowsFile(t *testing.T, name string) []inventory.Row {
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []inventory.Row
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r inventory.Row
		if _, err := fmt.Sscan(sc.Text(), &r.Key.SKU, &r.Key.Warehouse, &r.Key.Condition, &r.Key.Source, &r.Count, &r.Price); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, r)
	}
	return rows
}

// A frame whose checksum is good but whose version is unknown was written
// by a newer release: recovery refuses it with a clear error instead of
// cutting it as a torn tail.
func TestUnknownFrameVersionIsRefused(t *testing.T) {
	fs := vfs.NewMem()
	j, _, _ := open(t, fs, 1<<20)
	writeOps(t, j, genOps(5, 20), 10, 1)
	j.Close()
	seg := path.Join(dir, segmentName(1))
	buf, _ := vfs.ReadFile(fs, seg)
	h, size, bad, _ := parseFrame(buf[segmentHeaderSize:])
	if bad != "" || h.version != FrameVersion {
		t.Fatalf("first frame: %q, version %d", bad, h.version)
	}
	frame := slices.Clone(buf[segmentHeaderSize : segmentHeaderSize+size])
	binary.LittleEndian.PutUint16(frame[12:], FrameVersion+1)
	binary.LittleEndian.PutUint32(frame[8:], crc32.Checksum(frame[12:], castagnoli))
	f, err := fs.OpenAppend(seg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(frame, segmentHeaderSize); err != nil {
		t.Fatal(err)
	}
	f.Sync()
	f.Close()
	_, _, _, err = Open(Options{FS: fs, Dir: dir, SegmentBytes: 1 << 20})
	if !errors.Is(err, ErrUnknownVersion) || !strings.Contains(err.Error(), "frame format version 3") {
		t.Fatalf("want an unknown-version error naming version 3, got %v", err)
	}
}

// A snapshot of an unknown version is refused the same way.
func TestUnknownSnapshotVersionIsRefused(t *testing.T) {
	b := encodeSnapshot(&Snapshot{LSN: 3, Rows: stateAfter(genOps(6, 10))})
	copy(b, "allotsn9")
	binary.LittleEndian.PutUint32(b[len(b)-4:], crc32.Checksum(b[:len(b)-4], castagnoli))
	_, _, err := decodeSnapshot("x.snap", b, inventory.NewDecoder())
	if !errors.Is(err, ErrUnknownVersion) {
		t.Fatalf("want an unknown-version error, got %v", err)
	}
	// An unknown section tag is refused too.
	b = encodeSnapshot(&Snapshot{LSN: 3, Sections: []inventory.Section{{Tag: 200, Bytes: []byte{1}}}})
	if _, _, err := decodeSnapshot("x.snap", b, inventory.NewDecoder()); err == nil || !strings.Contains(err.Error(), "unknown to this release") {
		t.Fatalf("want an unknown-section error, got %v", err)
	}
}
