package postgres_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"allot/catalog"
	"allot/inventory"
	"allot/services"
	"allot/services/servicestest"
	"allot/store"
	"allot/store/postgres"
	"allot/store/storetest"
)

// audit10Schema is a schema of this test's own, dropped before and after,
// so that the tables it finds there are those the test's stores left.
const audit10Schema = "test_postgres_audit10"

func audit10Tables(t *testing.T, ctx context.Context, c *pgx.Conn) []string {
	t.Helper()
	rs, err := c.Query(ctx, "SELECT tablename FROM pg_tables WHERE schemaname = $1 ORDER BY tablename", audit10Schema)
	if err != nil {
		t.Fatal(err)
	}
	names, err := pgx.CollectRows(rs, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// Two bench runs that load a catalog on one server at once (two benches,
// a bench and a test) each search their own records, and the tables of a
// catalog are gone once its store is closed. With one fixed table,
// allot_catalog, each load truncated and refilled the other's: a run's
// check then failed, or passed on another run's data.
func TestCatalogsLoadedAtOnce(t *testing.T) {
	servicestest.Require(t, services.Postgres)
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, store.PostgresDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	dropSchema := func() {
		if _, err := admin.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+audit10Schema+" CASCADE"); err != nil {
			t.Fatal(err)
		}
	}
	dropSchema()
	defer dropSchema()

	openStore := func() *postgres.Store {
		st, err := postgres.Open(ctx, store.Config{Durability: store.DurabilityWrite, Workers: 2}, postgres.Options{Schema: audit10Schema})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	a, b := openStore(), openStore()
	closed := false
	defer func() {
		if !closed {
			a.Close()
			b.Close()
		}
	}()
	before := audit10Tables(t, ctx, admin)

	recsA, rowsA := storetest.TaggedCatalog("a", 6000)
	recsB, rowsB := storetest.TaggedCatalog("b", 4000)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	wg.Add(2)
	go func() { defer wg.Done(); errs[0] = a.LoadCatalog(ctx, recsA, rowsA) }()
	go func() { defer wg.Done(); errs[1] = b.LoadCatalog(ctx, recsB, rowsB) }()
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("load %d: %v", i, err)
		}
	}
	check := func(name string, st store.Store, recs []catalog.Record, rows []inventory.Row) {
		t.Helper()
		d, err := storetest.SearchDiff(ctx, st, recs, rows)
		if err != nil {
			t.Fatal(err)
		}
		if d != "" {
			t.Errorf("store %s, loaded beside another, answers wrongly: %s", name, d)
		}
	}
	check("a", a, recsA, rowsA)
	check("b", b, recsB, rowsB)

	// A reload of a beside b's searches.
	reloaded := make(chan error, 1)
	go func() { reloaded <- a.LoadCatalog(ctx, recsA[:3000], rowsA) }()
	check("b", b, recsB, rowsB)
	if err := <-reloaded; err != nil {
		t.Fatal(err)
	}
	check("a (reloaded)", a, recsA[:3000], rowsA)
	check("b", b, recsB, rowsB)

	closed = true
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if after := audit10Tables(t, ctx, admin); !slices.Equal(after, before) {
		t.Errorf("tables of schema %s: %v before the loads, %v once both stores are closed: a catalog outlived its store", audit10Schema, before, after)
	}
}
