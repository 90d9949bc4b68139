package storetest

import (
	"context"
	"fmt"

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
