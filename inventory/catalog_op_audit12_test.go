package inventory

import (
	"slices"
	"sync"
	"testing"

	"allot/catalog"
)

// CatalogSet owns its record: checking the op sorts the op's attributes
// (Record.Normalize), and must neither reorder the caller's slice nor race
// with another op built from the same record.
func TestCatalogSetClonesAttributes(t *testing.T) {
	attrs := []catalog.Attribute{{Name: "size", Value: "L"}, {Name: "colour", Value: "red"}}
	want := slices.Clone(attrs)
	r := catalog.Record{SKU: "s1", Title: "Jacke", Brand: "Acme", Attributes: attrs}
	op := CatalogSet(r)
	if d := op.Check(); d != "" {
		t.Fatal(d)
	}
	if !slices.Equal(attrs, want) {
		t.Fatalf("the caller's attributes after Check: %v, want them untouched: %v", attrs, want)
	}
	if op.Record.Attributes[0].Name != "colour" {
		t.Fatalf("the op's attributes: %v, want them sorted", op.Record.Attributes)
	}
	// Ops built from one record and checked at once (go test -race).
	shared := catalog.Record{SKU: "s1", Title: "Jacke", Brand: "Acme", Attributes: slices.Clone(want)}
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			op := CatalogSet(shared)
			op.Check()
		}()
	}
	wg.Wait()
}
