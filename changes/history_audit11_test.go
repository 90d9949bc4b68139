package changes_test

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"allot/changes"
	"allot/engine"
	"allot/inventory"
	"allot/journal"
)

// TestReaderBehindTheNewestSnapshotResumes: with the default
// KeepSnapshots a reader whose position lies before the newest snapshot
// (but after the one before it) still reads on from there: a relay whose
// broker was down across a snapshot used to find its position trimmed.
func TestReaderBehindTheNewestSnapshotResumes(t *testing.T) {
	cfg := engine.Config{Dir: t.TempDir(), Durability: engine.DurabilityWrite, SegmentBytes: 4096, SnapshotEveryOps: 100}
	e, err := engine.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	key := inventory.RowKey{SKU: "s1", Warehouse: "w", Condition: "new", Source: "own"}
	if _, err := e.Stock(key, 0, 5); err != nil {
		t.Fatal(err)
	}
	for range 1000 {
		if _, err := e.Release(key, 1); err != nil {
			t.Fatal(err)
		}
	}
	// The snapshots are taken in the background: one taken after the
	// check below moved the history on (a flake on a slow machine). Close
	// (it waits for them) and reopen with none due.
	waitNewestSnapshot(t, e.Dir())
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	cfg.SnapshotEveryOps = 1 << 20
	if e, err = engine.Open(cfg); err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	newest, _, err := journal.LoadSnapshot(nil, e.Dir(), math.MaxUint64)
	if err != nil {
		t.Fatal(err)
	}
	if newest < 200 {
		t.Fatalf("newest snapshot at %d: the test wants two", newest)
	}
	oldest, err := changes.Oldest(nil, e.Dir())
	if err != nil || oldest > newest-50 {
		t.Fatalf("oldest readable %d (%v), newest snapshot %d: no history kept before it", oldest, err, newest)
	}
	feed := changes.NewFeed(e)
	defer feed.Close()
	after := newest - 50
	evs, err := feed.Read(context.Background(), after, 10, 0)
	if err != nil || len(evs) != 10 || evs[0].Seq != after+1 {
		t.Fatalf("read after %d, before the newest snapshot %d: %d events, %v", after, newest, len(evs), err)
	}
	// Before the oldest kept: refused, naming it.
	if oldest > 1 {
		_, err := feed.Read(context.Background(), oldest-2, 10, 0)
		var te *journal.TrimmedError
		if !errors.As(err, &te) || te.Oldest != oldest {
			t.Fatalf("read after %d, before the oldest %d: %v", oldest-2, oldest, err)
		}
	}
}

// waitNewestSnapshot waits until the engine's background snapshots of dir
// settle (the same newest for 100 ms) and returns the newest one's LSN.
func waitNewestSnapshot(t *testing.T, dir string) uint64 {
	t.Helper()
	var newest uint64
	for stable := 0; stable < 5; time.Sleep(20 * time.Millisecond) {
		lsn, _, err := journal.LoadSnapshot(nil, dir, math.MaxUint64)
		if err != nil {
			t.Fatal(err)
		}
		if lsn == newest {
			stable++
		} else {
			newest, stable = lsn, 0
		}
	}
	return newest
}
