package redis

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"allot/catalog"
	"allot/inventory"
	"allot/store"
)

// testCatalog is n records whose titles start with one of a few words, in
// mixed case and with letters outside ASCII, all different from another
// catalog's (tag) so that answers tell whose records they are.
func testCatalog(tag string, n int) ([]catalog.Record, []inventory.Row) {
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

var testQueries = []catalog.Query{
	{Prefix: "s", Limit: 50},
	{Prefix: "STRASSE", Offset: 10, Limit: 20},
	{Prefix: "ÜBER", Brand: "ü", Limit: 30},
	{Prefix: "soft", Offset: 3, Limit: 7},
	{Prefix: "Café", Brand: "ACME", Offset: 5, Limit: 1000},
	{Prefix: "c", Limit: 1000},
}

// searchDiff runs testQueries on st and returns the first difference from
// the reference's answers over recs and rows, or "".
func searchDiff(ctx context.Context, st store.Store, recs []catalog.Record, rows []inventory.Row) (string, error) {
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
	for _, q := range testQueries {
		want, d := ref.Search(q, func(sku string) int64 { return units[sku] }, nil)
		if d != "" {
			return "", fmt.Errorf("query %+v: %s", q, d)
		}
		got, err := se.(store.SearchSession).Search(ctx, q, nil)
		if err != nil {
			return fmt.Sprintf("query %+v: %v", q, err), nil
		}
		if len(got) != len(want) {
			return fmt.Sprintf("query %+v: %d results, want %d", q, len(got), len(want)), nil
		}
		for i := range got {
			if got[i] != want[i] {
				return fmt.Sprintf("query %+v: result %d is %+v, want %+v", q, i, got[i], want[i]), nil
			}
		}
	}
	return "", nil
}

// catalogsAtOnce loads a catalog into each of two stores on the same
// server at once, then loads the first again while the second searches,
// and returns the first difference a search found.
func catalogsAtOnce(t *testing.T, newID func() string) string {
	ctx := context.Background()
	a, b := open(t).(*Store), open(t).(*Store)
	defer a.Close()
	defer b.Close()
	a.catalog.newID, b.catalog.newID = newID, newID
	recsA, rowsA := testCatalog("a", 6000)
	recsB, rowsB := testCatalog("b", 4000)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	wg.Add(2)
	go func() { defer wg.Done(); errs[0] = a.LoadCatalog(ctx, recsA, rowsA) }()
	go func() { defer wg.Done(); errs[1] = b.LoadCatalog(ctx, recsB, rowsB) }()
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		st   store.Store
		recs []catalog.Record
		rows []inventory.Row
	}{{a, recsA, rowsA}, {b, recsB, rowsB}} {
		d, err := searchDiff(ctx, c.st, c.recs, c.rows)
		if err != nil {
			t.Fatal(err)
		}
		if d != "" {
			return d
		}
	}
	// A reload of a (a new space, then the old one deleted) beside b's
	// searches.
	reloaded := make(chan error, 1)
	go func() { reloaded <- a.LoadCatalog(ctx, recsA[:3000], rowsA) }()
	d, err := searchDiff(ctx, b, recsB, rowsB)
	if err := <-reloaded; err != nil {
		t.Fatal(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if d != "" {
		return d
	}
	d, err = searchDiff(ctx, a, recsA[:3000], rowsA)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// Two catalogs loaded on one server at once (a bench and a test, two
// benches) each answer from their own records. Before each load had a
// space of its own, the second load cleared and refilled the first's keys
// and a 1M-record bench failed its check with records missing.
func TestCatalogsLoadedAtOnce(t *testing.T) {
	if d := catalogsAtOnce(t, nil); d != "" {
		t.Fatalf("a catalog loaded beside another answers wrongly: %s", d)
	}
}

// The test above catches shared keys: two stores given one space id
// answer with each other's records.
func TestCatalogsLoadedAtOnceCatchesSharedKeys(t *testing.T) {
	shared := fmt.Sprintf("shared-%d", time.Now().UnixNano())
	d := catalogsAtOnce(t, func() string { return shared })
	if d == "" {
		t.Fatal("two stores writing one catalog's keys passed the check")
	}
	t.Logf("caught: %s", d)
}

// A loaded catalog's keys carry the lease, and Close deletes them.
func TestCatalogLeaseAndClose(t *testing.T) {
	ctx := context.Background()
	st := open(t).(*Store)
	defer st.Close()
	recs, rows := testCatalog("lease", 100)
	if err := st.LoadCatalog(ctx, recs, rows); err != nil {
		t.Fatal(err)
	}
	sp := st.catalog.space.Load()
	for _, k := range []string{sp.index, sp.records} {
		ttl, err := st.client.PTTL(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		if ttl <= 0 || ttl > catalogLease {
			t.Errorf("key %s has a lease of %v, want (0, %v]", k, ttl, catalogLease)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	check := open(t).(*Store)
	defer check.Close()
	n, err := check.client.Exists(ctx, sp.index, sp.records).Result()
	if err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("%d of the catalog's keys outlived Close", n)
	}
	se, err := check.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer se.Close()
	if _, err := se.(store.SearchSession).Search(ctx, catalog.Query{Prefix: "a", Limit: 1}, nil); err == nil {
		t.Error("a search on a store with no catalog loaded did not fail")
	}
}
