package postgres_test

import (
	"context"
	"strings"
	"testing"

	"allot/inventory"
	"allot/services"
	"allot/services/servicestest"
	"allot/store"
	"allot/store/postgres"
	"allot/store/storetest"
)

// testSchema keeps this package's tables apart from the bench's and from
// other test packages that share the server.
const testSchema = "test_postgres"

// open opens the store in d, which sets the shared server's fsync for d:
// it is put back when the test ends.
func open(t *testing.T, d store.Durability) *postgres.Store {
	t.Helper()
	servicestest.Require(t, services.Postgres)
	keepServerFsync(t)
	st, err := postgres.Open(context.Background(), store.Config{Durability: d, Workers: 16}, postgres.Options{Schema: testSchema})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestConformance(t *testing.T) {
	for _, d := range []store.Durability{store.DurabilityFsync, store.DurabilityWrite, store.DurabilityNone} {
		t.Run(string(d), func(t *testing.T) {
			storetest.Run(t, func(t *testing.T) store.Store { return open(t, d) })
		})
	}
}

func TestDescribeReadsTheServerBack(t *testing.T) {
	for _, tc := range []struct {
		d    store.Durability
		want []string
	}{
		{store.DurabilityFsync, []string{"PostgreSQL 15", "synchronous_commit=on", "fsync=on", "test_postgres.rows logged"}},
		{store.DurabilityWrite, []string{"synchronous_commit=on", "fsync=off", "rows logged"}},
		{store.DurabilityNone, []string{"synchronous_commit=off", "fsync=off", "rows unlogged"}},
	} {
		st := open(t, tc.d)
		ctx := context.Background()
		if err := st.Load(ctx, []inventory.Row{{Key: inventory.RowKey{SKU: "s", Warehouse: "w", Condition: "c", Source: "o"}, Count: 1}}); err != nil {
			t.Fatal(err)
		}
		got, err := st.Describe(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("durability %s: Describe = %q, want it to mention %q", tc.d, got, w)
			}
		}
		se, err := st.Session(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := se.(store.Retrier); !ok {
			t.Error("a postgres session does not report conflict retries")
		}
		se.Close()
		st.Close()
	}
}
