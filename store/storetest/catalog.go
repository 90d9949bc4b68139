package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"allot/catalog"
	"allot/inventory"
	"allot/store"
)

// TaggedCatalog is n records whose titles start with one of a few words,
// in mixed case and with letters outside ASCII, and whose SKUs and titles
// carry tag, so that a search's answer tells whose records it holds (two
// catalogs loaded on one server at once); rows give three records in four
// some stock.
func TaggedCatalog(tag string, n int) ([]catalog.Record, []inventory.Row) {
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

// CatalogQueries are the searches SearchDiff runs: prefixes that case
// folding joins (ß/SS, ſ/s, Ü/ü), brand filters, offsets.
var CatalogQueries = []catalog.Query{
	{Prefix: "s", Limit: 50},
	{Prefix: "STRASSE", Offset: 10, Limit: 20},
	{Prefix: "ÜBER", Brand: "ü", Limit: 30},
	{Prefix: "soft", Offset: 3, Limit: 7},
	{Prefix: "Café", Brand: "ACME", Offset: 5, Limit: 1000},
	{Prefix: "c", Limit: 1000},
}

// SessionSearchDiff runs CatalogQueries on se (a store.SearchSession) and
// returns the first difference from the reference catalog's answers over
// recs and rows, or "". An error is the test's own (a record the
// reference refuses), not the store's.
func SessionSearchDiff(ctx context.Context, se store.Session, recs []catalog.Record, rows []inventory.Row) (string, error) {
	ref := catalog.New()
	for _, r := range recs {
		if d := ref.Set(r); d != "" {
			return "", fmt.Errorf("record %s: %s", r.SKU, d)
		}
	}
	units := store.SKUUnits(rows)
	for _, q := range CatalogQueries {
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

// SearchDiff is SessionSearchDiff on a new session of st.
func SearchDiff(ctx context.Context, st store.Store, recs []catalog.Record, rows []inventory.Row) (string, error) {
	se, err := st.Session(ctx)
	if err != nil {
		return "", err
	}
	defer se.Close()
	return SessionSearchDiff(ctx, se, recs, rows)
}

// CatalogPair is two stores of one server and the catalogs
// LoadCatalogsAtOnce loaded into them.
type CatalogPair struct {
	A, B         store.Store
	RecsA, RecsB []catalog.Record
	RowsA, RowsB []inventory.Row
	ctx          context.Context
}

// LoadCatalogsAtOnce loads TaggedCatalog(tagA, 6000) into a and
// TaggedCatalog(tagB, 4000) into b at the same time, then checks that
// each store answers from its own records (two runs loading a catalog on
// one server at once).
func LoadCatalogsAtOnce(t *testing.T, ctx context.Context, a, b store.Store, tagA, tagB string) *CatalogPair {
	t.Helper()
	p := &CatalogPair{A: a, B: b, ctx: ctx}
	p.RecsA, p.RowsA = TaggedCatalog(tagA, 6000)
	p.RecsB, p.RowsB = TaggedCatalog(tagB, 4000)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	wg.Add(2)
	go func() { defer wg.Done(); errs[0] = a.(store.Searcher).LoadCatalog(ctx, p.RecsA, p.RowsA) }()
	go func() { defer wg.Done(); errs[1] = b.(store.Searcher).LoadCatalog(ctx, p.RecsB, p.RowsB) }()
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("load %d, beside another: %v", i, err)
		}
	}
	p.Check(t, "a", a, p.RecsA, p.RowsA)
	p.Check(t, "b", b, p.RecsB, p.RowsB)
	return p
}

// Check reports an error unless st answers CatalogQueries as the
// reference does over recs and rows.
func (p *CatalogPair) Check(t *testing.T, name string, st store.Store, recs []catalog.Record, rows []inventory.Row) {
	t.Helper()
	d, err := SearchDiff(p.ctx, st, recs, rows)
	if err != nil {
		t.Fatal(err)
	}
	if d != "" {
		t.Errorf("store %s, loaded beside another, answers wrongly: %s", name, d)
	}
}

// ReloadBeside reloads A with the first half of its records while B
// searches, then checks both; A's catalog is that half afterwards.
func (p *CatalogPair) ReloadBeside(t *testing.T) {
	t.Helper()
	half := p.RecsA[:len(p.RecsA)/2]
	reloaded := make(chan error, 1)
	go func() { reloaded <- p.A.(store.Searcher).LoadCatalog(p.ctx, half, p.RowsA) }()
	p.Check(t, "b", p.B, p.RecsB, p.RowsB)
	if err := <-reloaded; err != nil {
		t.Fatalf("reload of a: %v", err)
	}
	p.RecsA = half
	p.Check(t, "a (reloaded)", p.A, p.RecsA, p.RowsA)
	p.Check(t, "b", p.B, p.RecsB, p.RowsB)
}
