package changes_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"allot/catalog"
	"allot/changes"
	"allot/engine"
	"allot/inventory"
)

// TestEventsAsTheContractSays checks every kind of event against DESIGN.md
// ("Change stream"), field by field: which ops make an event and which do
// not (idempotent repeats, a tick that expires nothing), op names, hold
// and key, a STOCK.SET of a new row (delta = count) and of an existing
// one (delta = new - old, kept when 0), deltas' signs, a multi-line hold
// naming one group twice (one row, the summed units), a confirm with no
// rows, an expiry, catalog events, and the JSON's field names.
func TestEventsAsTheContractSays(t *testing.T) {
	e, err := engine.Open(engine.Config{Dir: t.TempDir(), Durability: engine.DurabilityWrite})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	rk := func(sku, wh string) inventory.RowKey {
		return inventory.RowKey{SKU: sku, Warehouse: wh, Condition: "new", Source: "own"}
	}
	g := rk("a", "").Group()
	do := func(op inventory.Op, key string) inventory.Result {
		t.Helper()
		op.IdempotencyKey = key
		res, err := e.Do(op, nil)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	var want []string
	ev := func(s string) { want = append(want, s) }

	do(inventory.Stock(rk("a", "w1"), 5, 10), "")
	ev("stock [a/w1 +5=5]")
	do(inventory.Stock(rk("a", "w2"), 3, 10), "")
	ev("stock [a/w2 +3=3]")
	do(inventory.Stock(rk("a", "w1"), 7, 10), "")
	ev("stock [a/w1 +2=7]")
	do(inventory.Stock(rk("a", "w1"), 7, 99), "") // the price alone
	ev("stock [a/w1 +0=7]")
	do(inventory.Stock(rk("a", "w1"), 4, 99), "s1")
	ev("stock key=s1 [a/w1 -3=4]")
	do(inventory.Stock(rk("a", "w1"), 4, 99), "s1") // a repeat: no event
	do(inventory.Stock(rk("b", "w1"), 0, 1), "")    // a new row of 0
	ev("stock [b/w1 +0=0]")
	do(inventory.Capture(g, 6), "k1")
	ev("capture key=k1 [a/w1 -4=0 a/w2 -2=1]")
	do(inventory.Capture(g, 6), "k1") // a repeat
	if res := do(inventory.Capture(g, 100), "k2"); res.Code != inventory.CodeInsufficient {
		t.Fatalf("capture of 100: %v", res.Code)
	}
	// A keyed refusal is journaled (the key remembers it), so it has
	// its seq: an event that changes no row.
	ev("capture key=k2 []")
	do(inventory.Capture(g, 100), "") // an unkeyed refusal: not journaled
	do(inventory.Release(rk("a", "w1"), 3), "")
	ev("release [a/w1 +3=3]")
	if res := do(inventory.Release(rk("zz", "w1"), 3), ""); res.Code != inventory.CodeNotFound {
		t.Fatal(res.Code)
	}
	lines := []inventory.Demand{{Group: g, N: 2}, {Group: g, N: 1}} // one group named twice
	if res, err := e.Hold("h1", time.Hour, lines); err != nil || res.Code != inventory.CodeOK {
		t.Fatal(res, err)
	}
	ev("hold hold=h1 [a/w1 -3=0]")
	if res, err := e.Hold("h1", time.Hour, lines); err != nil || !res.Repeat {
		t.Fatal(res, err)
	}
	if _, err := e.Confirm("h1"); err != nil {
		t.Fatal(err)
	}
	ev("confirm hold=h1 []")
	if _, err := e.Confirm("h1"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Hold("h2", time.Hour, []inventory.Demand{{Group: g, N: 1}}); err != nil {
		t.Fatal(err)
	}
	ev("hold hold=h2 [a/w2 -1=0]")
	if _, err := e.Cancel("h2"); err != nil {
		t.Fatal(err)
	}
	ev("cancel hold=h2 [a/w2 +1=1]")
	if _, err := e.Cancel("h2"); err != nil {
		t.Fatal(err)
	}
	do(inventory.Order([]inventory.Demand{{Group: g, N: 1}}), "k3")
	ev("order key=k3 [a/w2 -1=0]")
	do(inventory.Order([]inventory.Demand{{Group: g, N: 1}}), "k3")
	do(inventory.Stock(rk("c", "w1"), 2, 1), "")
	ev("stock [c/w1 +2=2]")
	if _, err := e.Hold("h3", 20*time.Millisecond, []inventory.Demand{{Group: rk("c", "").Group(), N: 2}}); err != nil {
		t.Fatal(err)
	}
	ev("hold hold=h3 [c/w1 -2=0]")
	waitNoHolds(t, e)
	ev("expire hold=h3 [c/w1 +2=2]")
	if _, err := e.Tick(); err != nil { // nothing due: no event
		t.Fatal(err)
	}
	if _, err := e.CatalogSet(catalog.Record{SKU: "a", Title: "T", Brand: "B"}, "c1"); err != nil {
		t.Fatal(err)
	}
	ev("catalog.set key=c1 sku=a []")
	if _, err := e.CatalogDel("a", ""); err != nil {
		t.Fatal(err)
	}
	ev("catalog.del sku=a []")
	if _, err := e.CatalogDel("a", ""); err != nil { // nothing to delete: no event
		t.Fatal(err)
	}
	if _, err := e.Stock(rk("a", "w9"), 1, 1); err != nil {
		t.Fatal(err)
	}
	ev("stock [a/w9 +1=1]")

	// Read one event at a time through fresh feeds, and all at once: the
	// same events.
	all := readAll(t, changes.NewFeed(e), 0, changes.CountMax)
	var got []string
	var start int64
	for i, ev := range all {
		if ev.Seq != uint64(i+1) {
			t.Fatalf("event %d has seq %d", i, ev.Seq)
		}
		if ev.TimeMS < start || ev.TimeMS < time.Now().Add(-time.Hour).UnixMilli() {
			t.Errorf("seq %d: time_ms %d goes back or is no time of the engine's clock", ev.Seq, ev.TimeMS)
		}
		start = ev.TimeMS
		got = append(got, describe(ev))
		one, err := changes.NewFeed(e).Read(context.Background(), ev.Seq-1, 1, 0)
		if err != nil || len(one) != 1 || fmt.Sprint(one[0]) != fmt.Sprint(ev) {
			t.Errorf("seq %d read alone: %+v %v, read through: %+v", ev.Seq, one, err, ev)
		}
	}
	if g, w := strings.Join(got, "\n"), strings.Join(want, "\n"); g != w {
		t.Fatalf("events:\n%s\nwant:\n%s", g, w)
	}
	// The JSON's fields, by name.
	var m []map[string]any
	for _, ev := range all {
		var x map[string]any
		if err := json.Unmarshal(ev.AppendJSON(nil), &x); err != nil {
			t.Fatal(err)
		}
		m = append(m, x)
	}
	keys := func(x map[string]any) string {
		var ks []string
		for _, k := range []string{"seq", "time_ms", "op", "hold", "key", "sku", "rows"} {
			if _, ok := x[k]; ok {
				ks = append(ks, k)
			}
		}
		return fmt.Sprint(len(x) == len(ks), ks)
	}
	if k := keys(m[0]); k != "true [seq time_ms op rows]" {
		t.Errorf("stock event's fields: %s", k)
	}
	if k := keys(m[6]); k != "true [seq time_ms op key rows]" {
		t.Errorf("keyed capture's fields: %s", k)
	}
	if k := keys(m[9]); k != "true [seq time_ms op hold rows]" {
		t.Errorf("hold's fields: %s", k)
	}
	row := m[0]["rows"].([]any)[0].(map[string]any)
	if len(row) != 6 || row["sku"] != "a" || row["warehouse"] != "w1" || row["condition"] != "new" || row["source"] != "own" || row["delta"] != 5.0 || row["count_after"] != 5.0 {
		t.Errorf("a row's JSON: %v", row)
	}
	if rows, ok := m[10]["rows"].([]any); !ok || len(rows) != 0 || m[10]["op"] != "confirm" {
		t.Errorf("a confirm's rows: %v, want []", m[10])
	}
}

func describe(ev changes.Event) string {
	s := ev.Op
	if ev.Hold != "" {
		s += " hold=" + ev.Hold
	}
	if ev.Key != "" {
		s += " key=" + ev.Key
	}
	if ev.SKU != "" {
		s += " sku=" + ev.SKU
	}
	var rows []string
	for _, r := range ev.Rows {
		if r.Condition != "new" || r.Source != "own" {
			rows = append(rows, fmt.Sprint(r))
			continue
		}
		rows = append(rows, fmt.Sprintf("%s/%s %+d=%d", r.SKU, r.Warehouse, r.Delta, r.CountAfter))
	}
	return s + " [" + strings.Join(rows, " ") + "]"
}
