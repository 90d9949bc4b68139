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
	"allot/store/storetest"
)

// catalogsAtOnce loads a catalog into each of two stores on the same
// server at once, then loads the first again while the second searches,
// and returns the first difference a search found.
func catalogsAtOnce(t *testing.T, newID func() string) string {
	ctx := context.Background()
	a, b := open(t).(*Store), open(t).(*Store)
	defer a.Close()
	defer b.Close()
	a.catalog.newID, b.catalog.newID = newID, newID
	recsA, rowsA := storetest.TaggedCatalog("a", 6000)
	recsB, rowsB := storetest.TaggedCatalog("b", 4000)
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
		d, err := storetest.SearchDiff(ctx, c.st, c.recs, c.rows)
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
	d, err := storetest.SearchDiff(ctx, b, recsB, rowsB)
	if err := <-reloaded; err != nil {
		t.Fatal(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if d != "" {
		return d
	}
	d, err = storetest.SearchDiff(ctx, a, recsA[:3000], rowsA)
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
	recs, rows := storetest.TaggedCatalog("lease", 100)
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
