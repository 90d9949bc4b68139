package postgres_test

import (
	"context"
	"fmt"
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
)

// audit10Catalog is n records whose titles start with a few words shared
// by every tag, in mixed case and with letters outside ASCII, and whose
// SKUs and titles carry tag, so that an answer tells whose records it
// holds.
func audit10Catalog(tag string, n int) ([]catalog.Record, []inventory.Row) {
	words := []string{"Straße", "STRASSE", "über", "Über", "ſoft", "Soft", "café", "CAFÉ"}
	recs := make([]catalog.Record, n)
	var rows []inventory.Row
	for i := range recs {
		sku := fmt.Sprintf("%s-%05d", tag, i)
		recs[i] = catalog.Record{SKU: sku, Title: fmt.Sprintf("%s %s %d", words[i%len(words)], tag, i), Brand: []string{"Acme", "Über", "soft"}[i%3]}
		if i%4 != 0 {
			rows = append(rows, inventory.Row{Key: inventory.RowKey{SKU: sku, Warehouse: "w1", Condition: "new", Source: "own"}, Count: int64(i % 17)})
		}
	}
	return recs, rows
}

var audit10Queries = []catalog.Query{
	{Prefix: "s", Limit: 50},
	{Prefix: "STRASSE", Offset: 10, Limit: 20},
	{Prefix: "ÜBER", Brand: "ü", Limit: 30},
	{Prefix: "soft", Offset: 3, Limit: 7},
	{Prefix: "Café", Brand: "ACME", Offset: 5, Limit: 1000},
	{Prefix: "c", Limit: 1000},
}

// audit10SearchDiff runs the queries on st and returns the first
// difference from the reference's answers over recs and rows, or "".
func audit10SearchDiff(ctx context.Context, st store.Store, recs []catalog.Record, rows []inventory.Row) (string, error) {
	ref := catalog.New()
	for _, r := range recs {
		if d := ref.Set(r); d != "" {
			return "", fmt.Errorf("record %s: %s", r.SKU, d)
		}
	}
	units := store.SKUUnits(rows)
	se, err := st.Session(ctx)
	if err != nil {
		return "", err
	}
	defer se.Close()
	for _, q := range audit10Queries {
		want, d := ref.Search(q, func(sku string) int64 { return units[sku] }, nil)
		if d != "" {
			return "", fmt.Errorf("query %+v: %s", q, d)
		}
		got, err := se.(store.SearchSession).Search(ctx, q, nil)
		if err != nil {
			return fmt.Sprintf("query %+v: %v", q, err), nil
		}
		if len(got) != len(want) {
			return fmt.Sprintf("query %+v: %d results, want %d (first %+v)", q, len(got), len(want), got[:min(1, len(got))]), nil
		}
		for i := range got {
			if got[i] != want[i] {
				return fmt.Sprintf("query %+v: result %d is %+v, want %+v", q, i, got[i], want[i]), nil
			}
		}
	}
	return "", nil
}

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

	recsA, rowsA := audit10Catalog("a", 6000)
	recsB, rowsB := audit10Catalog("b", 4000)
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
		d, err := audit10SearchDiff(ctx, st, recs, rows)
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
