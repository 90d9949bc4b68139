package changes_test

import (
	"context"
	"testing"

	"allot/changes"
	"allot/engine"
	"allot/inventory"
)

// TestReadCountIsBounded: a read holds its events in memory at once, so
// Read keeps count to the contract's 1..CountMax whatever its caller
// passes. A count past it (or a negative one, which wrapped to a huge
// uint64) returned every event up to the newest in one slice.
func TestReadCountIsBounded(t *testing.T) {
	e, err := engine.Open(engine.Config{Dir: t.TempDir(), Durability: engine.DurabilityWrite})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	key := inventory.RowKey{SKU: "s1", Warehouse: "w", Condition: "new", Source: "own"}
	if _, err := e.Stock(key, 0, 5); err != nil {
		t.Fatal(err)
	}
	for range changes.CountMax + 500 {
		if _, err := e.Release(key, 1); err != nil {
			t.Fatal(err)
		}
	}
	if e.DurableLSN() <= changes.CountMax {
		t.Fatalf("durable %d: the test wants more than %d events", e.DurableLSN(), changes.CountMax)
	}
	for _, count := range []int{changes.CountMax + 1, 1 << 40, -1, 0} {
		feed := changes.NewFeed(e)
		evs, err := feed.Read(context.Background(), 0, count, 0)
		feed.Close()
		if err != nil || len(evs) == 0 || len(evs) > changes.CountMax || evs[0].Seq != 1 {
			t.Errorf("count %d: %d events, %v; want 1..%d from seq 1", count, len(evs), err, changes.CountMax)
		}
	}
}
