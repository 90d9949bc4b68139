package changes_test

import (
	"encoding/json"
	"testing"

	"allot/catalog"
	"allot/changes"
	"allot/engine"
	"allot/inventory"
)

// A catalog event says which SKU it changed: a consumer keeping a search
// index or a cache in step with the catalog needs it, and a catalog event
// has no rows to read it from. Other events carry no top-level sku (the
// field is omitted), and the JSON round-trips.
func TestCatalogEventsCarrySKU(t *testing.T) {
	e, err := engine.Open(engine.Config{Dir: t.TempDir(), Durability: engine.DurabilityWrite})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	key := inventory.RowKey{SKU: "s1", Warehouse: "w", Condition: "new", Source: "own"}
	if _, err := e.Stock(key, 10, 5); err != nil {
		t.Fatal(err)
	}
	if _, err := e.CatalogSet(catalog.Record{SKU: "c/1", Title: "Größe Jacke", Brand: "Acme"}, "k1"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.CatalogSet(catalog.Record{SKU: "c2", Title: "Hose", Brand: "Acme"}, ""); err != nil {
		t.Fatal(err)
	}
	if res, err := e.CatalogDel("c/1", ""); err != nil || res.Count != 1 {
		t.Fatal(res, err)
	}
	feed := changes.NewFeed(e)
	defer feed.Close()
	evs := readAll(t, feed, 0, changes.CountMax)
	want := []struct{ op, sku string }{{"stock", ""}, {"catalog.set", "c/1"}, {"catalog.set", "c2"}, {"catalog.del", "c/1"}}
	if len(evs) != len(want) {
		t.Fatalf("%d events, want %d: %+v", len(evs), len(want), evs)
	}
	for i, w := range want {
		ev := evs[i]
		js := ev.AppendJSON(nil)
		var m map[string]any
		if err := json.Unmarshal(js, &m); err != nil {
			t.Fatal(err)
		}
		sku, has := m["sku"]
		if ev.Op != w.op || has != (w.sku != "") || (has && sku != w.sku) {
			t.Errorf("event %d: %s, want op %q with top-level sku %q (none when empty)", ev.Seq, js, w.op, w.sku)
		}
		back, err := changes.ParseEvent(js)
		if err != nil || string(back.AppendJSON(nil)) != string(js) {
			t.Errorf("event %d: %s does not round-trip: %s (%v)", ev.Seq, js, back.AppendJSON(nil), err)
		}
	}
}
