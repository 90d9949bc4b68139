package inventory

import (
	"testing"

	"allot/catalog"
)

// A search result's units follow the SKU's stock whatever came first (the
// record or the stock), across groups added later, captures and a record
// set again: the link a record keeps to its SKU's groups is never stale.
func TestSearchUnitsFollowStock(t *testing.T) {
	s := NewState()
	apply := func(op Op) Result {
		t.Helper()
		res := s.Apply(&op, nil)
		if res.Code != CodeOK {
			t.Fatalf("%v: %v %s", op.Kind, res.Code, res.Detail)
		}
		return res
	}
	units := func(sku string) int64 {
		t.Helper()
		res := apply(Search(catalog.Query{Prefix: "Red", Limit: 10}))
		for _, h := range res.Hits {
			if h.SKU == sku {
				return h.Available
			}
		}
		t.Fatalf("%s not found in %+v", sku, res.Hits)
		return 0
	}
	// Stock first, then the record.
	apply(Stock(RowKey{"a", "w1", "new", "s1"}, 4, 1))
	apply(CatalogSet(catalog.Record{SKU: "a", Title: "Red shoe", Brand: "X"}))
	// The record first, then the stock.
	apply(CatalogSet(catalog.Record{SKU: "b", Title: "Red hat", Brand: "X"}))
	if got := units("b"); got != 0 {
		t.Fatalf("b without stock: %d", got)
	}
	apply(Stock(RowKey{"b", "w1", "new", "s1"}, 5, 1))
	for _, c := range []struct {
		op   Op
		a, b int64
	}{
		{Stock(RowKey{"b", "w2", "new", "s1"}, 1, 1), 4, 6},    // another row of the group
		{Stock(RowKey{"b", "w1", "used", "s2"}, 3, 1), 4, 9},   // another group of the SKU
		{Stock(RowKey{"a", "w1", "used", "s9"}, 10, 1), 14, 9}, // a's second group
		{Capture(GroupKey{"b", "used", "s2"}, 2), 14, 7},
		{CatalogSet(catalog.Record{SKU: "a", Title: "Red shoes", Brand: "Y"}), 14, 7}, // set again
		{Release(RowKey{"a", "w1", "new", "s1"}, 1), 15, 7},
	} {
		apply(c.op)
		if a, b := units("a"), units("b"); a != c.a || b != c.b {
			t.Fatalf("after %v: a %d, b %d; want %d, %d", c.op.Kind, a, b, c.a, c.b)
		}
		if a, b := s.SKUAvailable("a"), s.SKUAvailable("b"); a != c.a || b != c.b {
			t.Fatalf("SKUAvailable after %v: a %d, b %d", c.op.Kind, a, b)
		}
	}
}
