package redis

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"

	"allot/inventory"
	"allot/services/servicestest"
	"allot/store"
	"allot/store/storetest"
)

func open(t *testing.T) store.Store {
	t.Helper()
	servicestest.Require(t, "redis")
	st, err := store.Open(context.Background(), "redis", store.Config{Durability: store.DurabilityWrite, Workers: 8})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestConformance(t *testing.T) { storetest.Run(t, open) }

func rowMap(t *testing.T, st store.Store) map[inventory.RowKey]inventory.Row {
	t.Helper()
	rows, err := st.Rows(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	m := make(map[inventory.RowKey]inventory.Row, len(rows))
	for _, r := range rows {
		m[r.Key] = r
	}
	return m
}

// Counts beyond 2^53 do not fit the double of a Lua number: releases and
// captures on them must stay exact.
func TestCountsBeyondDoublesAreExact(t *testing.T) {
	const big = 1<<53 + 1
	g := inventory.GroupKey{SKU: "s", Condition: "c", Source: "o"}
	ctx := context.Background()
	st := open(t)
	defer st.Close()
	if err := st.Load(ctx, []inventory.Row{{Key: g.Row("a"), Count: big, Price: inventory.CountMax}}); err != nil {
		t.Fatal(err)
	}
	se, err := st.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer se.Close()
	res, err := se.Release(ctx, g.Row("a"), 2)
	if err != nil || res.Code != inventory.CodeOK || res.Count != big+2 {
		t.Fatalf("release 2 to 2^53+1 = %+v, %v; want %d", res, err, int64(big+2))
	}
	res, err = se.Capture(ctx, g, 3, nil)
	if err != nil || res.Code != inventory.CodeOK || !slices.Equal(res.Lines, []inventory.Line{{Warehouse: "a", Count: 3}}) {
		t.Fatalf("capture 3 = %+v, %v", res, err)
	}
	if got := rowMap(t, st)[g.Row("a")]; got.Count != big-1 || got.Price != inventory.CountMax {
		t.Errorf("row = %+v, want count %d price %d", got, int64(big-1), int64(inventory.CountMax))
	}
}

// Rows whose ids would join to the same text under a ":"-separated key
// stay two rows.
func TestSeparatorsInIDs(t *testing.T) {
	ctx := context.Background()
	rows := []inventory.Row{
		{Key: inventory.RowKey{SKU: "a:b", Warehouse: "c", Condition: "d", Source: "e"}, Count: 1, Price: 1},
		{Key: inventory.RowKey{SKU: "a", Warehouse: "b:c", Condition: "d", Source: "e"}, Count: 2, Price: 2},
		{Key: inventory.RowKey{SKU: "*", Warehouse: "[x]", Condition: "{d}", Source: "?"}, Count: 3, Price: 3},
	}
	st := open(t)
	defer st.Close()
	if err := st.Load(ctx, rows); err != nil {
		t.Fatal(err)
	}
	got := rowMap(t, st)
	for _, r := range rows {
		if got[r.Key] != r {
			t.Errorf("row %v read back as %+v", r.Key, got[r.Key])
		}
	}
	if len(got) != len(rows) {
		t.Errorf("read %d rows, want %d", len(got), len(rows))
	}
}

func TestDescribeReadsSettingsBack(t *testing.T) {
	st := open(t)
	defer st.Close()
	d, err := st.(store.Describer).Describe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(d, "redis 7") || !strings.Contains(d, "appendonly yes, appendfsync no") {
		t.Fatalf("Describe = %q; want the version and the write mode's settings read back", d)
	}
}

// Rows right after a large Load reads each row once. Redis may still be
// resizing its keyspace then, when SCAN can return a key twice; the test
// cannot force that, but it checks the count end to end on many keys.
func TestRowsAfterLargeLoadReadsEachRowOnce(t *testing.T) {
	ctx := context.Background()
	rows := make([]inventory.Row, 20000)
	for i := range rows {
		rows[i] = inventory.Row{Key: inventory.RowKey{SKU: strconv.Itoa(i / 9), Warehouse: strconv.Itoa(i % 9), Condition: "c", Source: "s"}, Count: int64(i), Price: 1}
	}
	st := open(t)
	defer st.Close()
	if err := st.Load(ctx, rows); err != nil {
		t.Fatal(err)
	}
	got, err := st.Rows(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(rows) {
		t.Fatalf("Rows read %d rows, loaded %d", len(got), len(rows))
	}
}
