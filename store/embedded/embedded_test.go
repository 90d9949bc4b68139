package embedded

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"allot/inventory"
	"allot/store"
	"allot/store/storetest"
)

func TestConformance(t *testing.T) {
	for _, mode := range []store.Durability{store.DurabilityFsync, store.DurabilityWrite, store.DurabilityNone} {
		t.Run(string(mode), func(t *testing.T) {
			storetest.Run(t, func(t *testing.T) store.Store {
				st, err := store.Open(context.Background(), "embedded", store.Config{Durability: mode})
				if err != nil {
					t.Fatal(err)
				}
				return st
			})
		})
	}
}

func TestDataDirSurvivesClose(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "data")
	rows := []inventory.Row{{Key: inventory.RowKey{SKU: "s", Warehouse: "w", Condition: "c", Source: "o"}, Count: 7, Price: 3}}
	st, err := store.Open(ctx, "embedded", store.Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Load(ctx, rows); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st, err = store.Open(ctx, "embedded", store.Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	got, err := st.Rows(ctx)
	if err != nil || !slices.Equal(got, rows) {
		t.Fatalf("rows after reopen: %v %v", got, err)
	}
}

func TestUnwritableDataDir(t *testing.T) {
	_, err := store.Open(context.Background(), "embedded", store.Config{DataDir: "/proc/allot-cannot-live-here"})
	if err == nil {
		t.Fatal("opened a store in /proc")
	}
}
