package cluster

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"allot/engine"
	"allot/inventory"
)

// TestInstallSnapshotNamesTheFileByItsContents: a node installing the
// stored snapshot reads its metadata, then its bytes; the primary may store
// a newer one in between. The metadata then names op X and the bytes hold
// op Y. The file must be named by Y: named by X, the engine's recovery
// refuses it as corrupt, at this start and every later one. Bytes that are
// no snapshot are refused before anything is written.
func TestInstallSnapshotNamesTheFileByItsContents(t *testing.T) {
	l := testShardLog(t, "install", 3*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// Two snapshots of one engine: at op x, and at a later op y.
	src := t.TempDir()
	e, err := engine.Open(engine.Config{Dir: src, Durability: engine.DurabilityWrite, SnapshotEveryOps: 50})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	key := inventory.RowKey{SKU: "s", Warehouse: "w", Condition: "new", Source: "own"}
	next := func(after uint64) (uint64, []byte) {
		deadline := time.Now().Add(10 * time.Second)
		for i := 0; ; i++ {
			if _, err := e.Stock(key, int64(i), 100); err != nil {
				t.Fatal(err)
			}
			if name, lsn, err := newestSnapshotFile(src); err == nil && lsn > after {
				if b, err := os.ReadFile(name); err == nil {
					return lsn, b
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("no snapshot past op %d within 10 s", after)
			}
			time.Sleep(time.Millisecond)
		}
	}
	x, _ := next(0)
	y, newer := next(x)

	put := func(lsn uint64, data []byte) {
		t.Helper()
		if _, err := l.snaps.Put(ctx, jetstream.ObjectMeta{Name: snapshotObject, Metadata: map[string]string{
			"lsn": strconv.FormatUint(lsn, 10), "seq": "1"}}, bytes.NewReader(data)); err != nil {
			t.Fatal(err)
		}
	}
	put(x, newer) // what the race leaves: metadata of x, bytes of y
	dir := t.TempDir()
	got, err := l.installSnapshot(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if got != y {
		t.Errorf("installed at op %d, the bytes hold op %d", got, y)
	}
	e2, err := engine.Open(engine.Config{Dir: dir, Durability: engine.DurabilityWrite})
	if err != nil {
		t.Fatalf("the engine does not open on the installed snapshot: %v", err)
	}
	defer e2.Close()
	if lsn := e2.DurableLSN(); lsn != y {
		t.Errorf("the engine opened at op %d, want %d", lsn, y)
	}

	put(y, []byte("not a snapshot at all, but long enough to be read"))
	empty := t.TempDir()
	if _, err := l.installSnapshot(ctx, empty); err == nil || !strings.Contains(err.Error(), "not a snapshot") {
		t.Errorf("bytes that are no snapshot: %v, want an error saying so", err)
	}
	if names, _ := os.ReadDir(empty); len(names) != 0 {
		t.Errorf("a refused snapshot left %d files in the data directory", len(names))
	}
}
