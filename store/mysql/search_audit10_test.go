package mysql_test

import (
	"context"
	"database/sql"
	"slices"
	"strings"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"allot/services"
	"allot/services/servicestest"
	"allot/store"
	"allot/store/mysql"
	"allot/store/storetest"
)

func audit10DB(t *testing.T) *sql.DB {
	t.Helper()
	mc, err := gomysql.ParseDSN(store.MariaDBDSN)
	if err != nil {
		t.Fatal(err)
	}
	c, err := gomysql.NewConnector(mc)
	if err != nil {
		t.Fatal(err)
	}
	return sql.OpenDB(c)
}

// audit10Tables lists the tables of the database whose names start with
// prefix.
func audit10Tables(t *testing.T, ctx context.Context, db *sql.DB, prefix string) []string {
	t.Helper()
	like := strings.NewReplacer(`\`, `\\`, `_`, `\_`, `%`, `\%`).Replace(prefix) + "%"
	rs, err := db.QueryContext(ctx, "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME LIKE ? ORDER BY TABLE_NAME", like)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	var names []string
	for rs.Next() {
		var n string
		if err := rs.Scan(&n); err != nil {
			t.Fatal(err)
		}
		names = append(names, n)
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	return names
}

// Two bench runs that load a catalog on one server at once (two benches,
// a bench and a test) each search their own records, and the tables of a
// catalog are gone once its store is closed. With one fixed table per
// flavour (rows_catalog, rows_myisam_catalog), each load dropped and
// recreated the other's: a run's search then failed, or answered from
// another run's records.
func TestCatalogsLoadedAtOnce(t *testing.T) {
	servicestest.Require(t, services.MariaDB)
	for _, tc := range []struct {
		e     mysql.Engine
		table string
	}{{mysql.InnoDB, "test_audit10"}, {mysql.MyISAM, "test_audit10_myisam"}} {
		t.Run(string(tc.e), func(t *testing.T) { testCatalogsLoadedAtOnce(t, tc.e, tc.table) })
	}
}

func testCatalogsLoadedAtOnce(t *testing.T, e mysql.Engine, table string) {
	ctx := context.Background()
	db := audit10DB(t)
	defer db.Close()
	// The catalog tables of this test's table prefix, and only those:
	// the InnoDB prefix test_audit10_catalog does not match the MyISAM
	// one's, test_audit10_myisam_catalog.
	prefix := table + "_catalog"
	dropAll := func() {
		for _, n := range audit10Tables(t, context.Background(), db, prefix) {
			if _, err := db.Exec("DROP TABLE IF EXISTS `" + n + "`"); err != nil {
				t.Fatal(err)
			}
		}
	}
	dropAll()
	defer dropAll()
	defer db.Exec("DROP TABLE IF EXISTS `" + table + "`")

	openStore := func() *mysql.Store {
		st, err := mysql.Open(ctx, store.Config{Durability: store.DurabilityWrite, Workers: 2}, mysql.Options{Engine: e, Table: table})
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
	before := audit10Tables(t, ctx, db, prefix)

	// A search before any load says so.
	if d, err := storetest.SearchDiff(ctx, a, nil, nil); err != nil {
		t.Fatal(err)
	} else if !strings.Contains(d, "no catalog loaded") {
		t.Errorf("a search before any load: %q, want an error saying no catalog is loaded", d)
	}

	p := storetest.LoadCatalogsAtOnce(t, ctx, a, b, "a", "b")

	// A session of a opened before a's reload, used after it.
	kept, err := a.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer kept.Close()
	if d, err := storetest.SessionSearchDiff(ctx, kept, p.RecsA, p.RowsA); err != nil {
		t.Fatal(err)
	} else if d != "" {
		t.Errorf("store a, a session before the reload: %s", d)
	}

	// A reload of a beside b's searches.
	p.ReloadBeside(t)
	if d, err := storetest.SessionSearchDiff(ctx, kept, p.RecsA, p.RowsA); err != nil {
		t.Fatal(err)
	} else if d != "" {
		t.Errorf("store a, a session opened before the reload, searched after it: %s", d)
	}

	// A load that fails part way (a SKU repeated after the first INSERT
	// batch) leaves no table behind, and the catalog loaded before still
	// answers.
	loaded := audit10Tables(t, ctx, db, prefix)
	bad, badRows := storetest.TaggedCatalog("c", 2500)
	bad[2400].SKU = bad[10].SKU
	if err := a.LoadCatalog(ctx, bad, badRows); err == nil {
		t.Error("a load with a repeated SKU succeeded")
	}
	if got := audit10Tables(t, ctx, db, prefix); !slices.Equal(got, loaded) {
		t.Errorf("catalog tables %v before a failed load, %v after it: the failed load left its table", loaded, got)
	}
	p.Check(t, "a (after a failed load)", a, p.RecsA, p.RowsA)

	// So does a load whose context ends part way, its connection then
	// broken: the new table must be dropped on another.
	big, bigRows := storetest.TaggedCatalog("d", 60000)
	cctx, cancel := context.WithTimeout(ctx, 40*time.Millisecond)
	err = a.LoadCatalog(cctx, big, bigRows)
	cancel()
	if err == nil {
		t.Log("the load meant to be cancelled finished in time: the cancelled load is not checked")
		p.Check(t, "a (loaded)", a, big, bigRows)
	} else {
		t.Logf("cancelled load: %v", err)
		if got := audit10Tables(t, ctx, db, prefix); !slices.Equal(got, loaded) {
			t.Errorf("catalog tables %v before a cancelled load, %v after it: the cancelled load left its table", loaded, got)
		}
		p.Check(t, "a (after a cancelled load)", a, p.RecsA, p.RowsA)
	}

	kept.Close()
	closed = true
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if after := audit10Tables(t, ctx, db, prefix); !slices.Equal(after, before) {
		t.Errorf("catalog tables %s*: %v before the loads, %v once both stores are closed: a catalog outlived its store", prefix, before, after)
	}
}
