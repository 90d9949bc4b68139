package changes_test

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"allot/changes"
	"allot/engine"
	"allot/inventory"
	"allot/journal"
	"allot/vfs"
)

// TestReadFromTheBeginningAfterTheFirstSnapshot: KeepSnapshots counts the
// state before the first snapshot as one kept, so after the first
// snapshot the journal still holds every op from seq 1. CHANGES 0 (and
// any cursor up to the snapshot) must read them: DESIGN.md, "Readers
// resume from any seq still in the journal" and "CHANGES 0 reads from the
// beginning". It was refused as trimmed, naming the snapshot's next seq
// (journal.Oldest counts from the oldest snapshot, not from the empty
// state), while op 1 was still on disk.
func TestReadFromTheBeginningAfterTheFirstSnapshot(t *testing.T) {
	dir := t.TempDir()
	cfg := engine.Config{Dir: dir, Durability: engine.DurabilityWrite, SnapshotEveryOps: 100, SegmentBytes: 4096}
	e, err := engine.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	key := inventory.RowKey{SKU: "s1", Warehouse: "w", Condition: "new", Source: "own"}
	if _, err := e.Stock(key, 0, 5); err != nil {
		t.Fatal(err)
	}
	for range 150 {
		if _, err := e.Release(key, 1); err != nil {
			t.Fatal(err)
		}
	}
	// Close (it waits for the background snapshot) and reopen with no
	// snapshot due, so that nothing trims while the test reads.
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	cfg.SnapshotEveryOps = 1 << 30
	if e, err = engine.Open(cfg); err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	snap, _, err := journal.LoadSnapshot(nil, dir, math.MaxUint64)
	if err != nil || snap == 0 {
		t.Fatalf("no snapshot (%d, %v): the test proves nothing", snap, err)
	}
	for range 10 {
		if _, err := e.Release(key, 1); err != nil {
			t.Fatal(err)
		}
	}
	r, err := journal.NewReader(nil, dir, 1)
	if err != nil {
		t.Fatalf("op 1 is no longer in the journal (%v): the test proves nothing", err)
	}
	r.Close()
	if o, err := changes.Oldest(nil, dir); err != nil || o != 1 {
		t.Errorf("changes.Oldest = %d, %v; want 1 (op 1 is in the journal)", o, err)
	}
	feed := changes.NewFeed(e)
	defer feed.Close()
	for _, after := range []uint64{0, 1, snap / 2, snap - 1, snap} {
		evs, err := feed.Read(context.Background(), after, 3, 0)
		if err != nil || len(evs) != 3 || evs[0].Seq != after+1 {
			t.Errorf("read after %d (the journal holds every op from 1, snapshot at %d): %d events, %v", after, snap, len(evs), err)
		}
	}
	all := readAll(t, feed, 0, 64)
	rows := map[inventory.RowKey]int64{}
	if err := rebuild(1, all, rows); err != nil {
		t.Fatal(err)
	}
	want, err := e.Rows()
	if err != nil {
		t.Fatal(err)
	}
	if err := equalRows(rows, want); err != nil {
		t.Fatal(err)
	}
	// Later snapshots trim the history before the first: cursor 0 is
	// then refused, naming the oldest kept (journal.Oldest), and reading
	// from there works.
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	cfg.SnapshotEveryOps = 100
	if e, err = engine.Open(cfg); err != nil {
		t.Fatal(err)
	}
	for range 500 {
		if _, err := e.Release(key, 1); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	cfg.SnapshotEveryOps = 1 << 30
	if e, err = engine.Open(cfg); err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for range 10 {
		if _, err := e.Release(key, 1); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := journal.NewReader(nil, dir, 1); err == nil {
		t.Fatal("op 1 is still in the journal after several snapshots: the test proves nothing")
	}
	kept, err := journal.Oldest(nil, dir)
	if err != nil || kept <= snap {
		t.Fatalf("journal.Oldest = %d, %v: want past the first snapshot %d", kept, err, snap)
	}
	feed2 := changes.NewFeed(e)
	defer feed2.Close()
	for _, after := range []uint64{0, kept - 2} {
		_, err = feed2.Read(context.Background(), after, 3, 0)
		var te *journal.TrimmedError
		if !errors.As(err, &te) || te.Oldest != kept {
			t.Fatalf("read after %d, before the oldest kept: %v, want trimmed, oldest %d", after, err, kept)
		}
	}
	if o, err := changes.Oldest(nil, dir); err != nil || o != kept {
		t.Errorf("changes.Oldest = %d, %v; want %d", o, err, kept)
	}
	if evs, err := feed2.Read(context.Background(), kept-1, 3, 0); err != nil || len(evs) != 3 || evs[0].Seq != kept {
		t.Fatalf("read at the oldest: %d events, %v", len(evs), err)
	}
}

// TestBrokenHistoryBeforeTheFirstSnapshotIsTrimmed: the ops before the
// oldest snapshot kept are read on trust (changes.Oldest): when they
// break off (here a segment removed by hand; a snapshot installed from
// elsewhere or a power cut leave the same), the follower serves what
// precedes the break and then reports the rest as trimmed, naming the
// oldest op journal.Oldest vouches for, never as damage.
func TestBrokenHistoryBeforeTheFirstSnapshotIsTrimmed(t *testing.T) {
	dir := t.TempDir()
	// fsync: the segments are synced, so the reader takes the break for
	// damage (in write mode it takes it for ops a power cut lost).
	cfg := engine.Config{Dir: dir, Durability: engine.DurabilityFsync, SnapshotEveryOps: 300, SegmentBytes: 4096}
	e, err := engine.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	key := inventory.RowKey{SKU: "s1", Warehouse: "w", Condition: "new", Source: "own"}
	if _, err := e.Stock(key, 0, 5); err != nil {
		t.Fatal(err)
	}
	for range 320 {
		if _, err := e.Release(key, 1); err != nil {
			t.Fatal(err)
		}
	}
	last := e.DurableLSN()
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	snap, _, err := journal.LoadSnapshot(nil, dir, math.MaxUint64)
	if err != nil || snap == 0 {
		t.Fatalf("no snapshot (%d, %v): the test proves nothing", snap, err)
	}
	names, err := vfs.OS{}.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	var segs []string
	for _, n := range names {
		if strings.HasPrefix(n, "journal-") && strings.HasSuffix(n, ".log") {
			segs = append(segs, n)
		}
	}
	slices.Sort(segs)
	if len(segs) < 3 || segs[0] != "journal-00000000000000000001.log" {
		t.Fatalf("segments %v: the test wants three, the first at op 1", segs)
	}
	second, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(segs[1], "journal-"), ".log"), 10, 64)
	third, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(segs[2], "journal-"), ".log"), 10, 64)
	if third > snap {
		t.Fatalf("segments %v, snapshot %d: the test wants the second wholly before the snapshot", segs, snap)
	}
	if err := os.Remove(filepath.Join(dir, segs[1])); err != nil {
		t.Fatal(err)
	}
	fol, err := changes.NewFollower(nil, dir, 0, last)
	if err != nil {
		t.Fatalf("a follower from 0: %v", err)
	}
	defer fol.Close()
	var got uint64
	for {
		ev, ok, err := fol.Next(last)
		if err != nil {
			var te *journal.TrimmedError
			if !errors.As(err, &te) || te.Oldest != snap+1 || got != second-1 {
				t.Fatalf("after %d events (the break is at %d): %v; want trimmed, oldest %d", got, second, err, snap+1)
			}
			break
		}
		if !ok {
			t.Fatalf("read through a removed segment to %d", got)
		}
		got = ev.Seq
	}
	// A follower placed past the break, below the snapshot, is refused
	// the same way.
	if _, err := changes.NewFollower(nil, dir, second+1, last); !errors.Is(err, journal.ErrTrimmed) {
		t.Fatalf("a follower from %d, past the break: %v, want trimmed", second+1, err)
	}
}
