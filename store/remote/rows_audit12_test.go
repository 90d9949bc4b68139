package remote_test

import (
	"context"
	"errors"
	"testing"

	"allot/engine"
	"allot/inventory"
	"allot/server/servertest"
	"allot/store"
	"allot/store/remote"
)

// TestRowsWithoutALoadIsRefused: a store reads back only the keys it
// loaded (the server lists no rows). One opened afresh (the crash
// audit's fallback after a restart) answered no rows at all, and the
// audit counted every loaded row as lost.
func TestRowsWithoutALoadIsRefused(t *testing.T) {
	s := servertest.Start(t, servertest.Options{NoHTTP: true, Durability: engine.DurabilityWrite})
	ctx := context.Background()
	cfg := store.Config{Addr: s.RESPAddr(), Durability: store.DurabilityWrite}
	loader, err := remote.Open(ctx, cfg, remote.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer loader.Close()
	key := inventory.RowKey{SKU: "r1", Warehouse: "w", Condition: "new", Source: "own"}
	if err := loader.Load(ctx, []inventory.Row{{Key: key, Count: 3}}); err != nil {
		t.Fatal(err)
	}
	if rows, err := loader.Rows(ctx); err != nil || len(rows) != 1 {
		t.Fatalf("the loading store reads back %v, %v", rows, err)
	}
	fresh, err := remote.Open(ctx, cfg, remote.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	rows, err := fresh.Rows(ctx)
	if !errors.Is(err, remote.ErrNotLoaded) {
		t.Fatalf("a store that loaded nothing read back %d rows, %v; want ErrNotLoaded", len(rows), err)
	}
}
