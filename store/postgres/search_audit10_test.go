package postgres_test

import (
	"context"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"

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
	keepServerFsync(t) // write mode switches the shared server's fsync
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

	p := storetest.LoadCatalogsAtOnce(t, ctx, a, b, "a", "b")

	// A reload of a beside b's searches.
	p.ReloadBeside(t)

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
