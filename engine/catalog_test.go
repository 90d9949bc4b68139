package engine

import (
	"fmt"
	"reflect"
	"testing"

	"allot/catalog"
	"allot/inventory"
)

// The catalog survives a restart, from the journal alone and from a
// snapshot plus the journal after it.
func TestCatalogRecovers(t *testing.T) {
	for _, every := range []int64{1 << 30, 7} {
		t.Run(fmt.Sprint("snapshot-every-", every), func(t *testing.T) {
			dir := t.TempDir()
			cfg := Config{Dir: dir, Durability: DurabilityFsync, SnapshotEveryOps: every}
			e, err := Open(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.Stock(inventory.RowKey{SKU: "s1", Warehouse: "w", Condition: "new", Source: "own"}, 4, 10); err != nil {
				t.Fatal(err)
			}
			for i := range 30 {
				r := catalog.Record{SKU: fmt.Sprint("s", i), Title: fmt.Sprint("Größe ", i), Brand: "Acme"}
				if res, err := e.CatalogSet(r, fmt.Sprint("k", i)); err != nil || res.Code != inventory.CodeOK {
					t.Fatal(res, err)
				}
			}
			for i := 0; i < 30; i += 3 {
				if res, err := e.CatalogDel(fmt.Sprint("s", i+2), ""); err != nil || res.Count != 1 {
					t.Fatal(res, err)
				}
			}
			want, _ := e.CatalogRecords()
			hits, _ := e.Search(catalog.Query{Prefix: "GRÖSSE"})
			if len(hits.Hits) != 0 {
				t.Fatalf("ß is not ss under simple folding: %+v", hits.Hits)
			}
			hits, _ = e.Search(catalog.Query{Prefix: "GRÖßE 1", Limit: 3})
			if len(hits.Hits) != 3 || hits.Hits[0] != (catalog.Result{SKU: "s1", Title: "Größe 1", Brand: "Acme", Available: 4}) {
				t.Fatalf("search: %+v", hits.Hits)
			}
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
			e, err = Open(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			got, _ := e.CatalogRecords()
			if len(got) != 20 || !reflect.DeepEqual(got, want) {
				t.Fatalf("after restart %d records, want %d", len(got), len(want))
			}
			// The idempotency keys came back too: a repeat is answered, not
			// applied.
			res, err := e.CatalogSet(catalog.Record{SKU: "s5", Title: "other", Brand: "Acme"}, "k5")
			if err != nil || res.Code != inventory.CodeMismatch {
				t.Fatalf("a repeated key with another record: %+v %v", res, err)
			}
		})
	}
}
