package redis

import (
	"context"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"allot/inventory"
	"allot/store"
)

// requireServer skips (or, with CI=true, fails) when the project's Redis is
// not listening.
func requireServer(t *testing.T) {
	t.Helper()
	c := goredis.NewClient(&goredis.Options{Addr: AddrDefault})
	defer c.Close()
	if err := c.Ping(context.Background()).Err(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("redis at %s: %v", AddrDefault, err)
		}
		t.Skipf("redis at %s: %v", AddrDefault, err)
	}
}

func openStore(t *testing.T, rows []inventory.Row) *Store {
	t.Helper()
	requireServer(t)
	st, err := Open(context.Background(), store.Config{Durability: store.DurabilityWrite, Workers: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Load(context.Background(), rows); err != nil {
		t.Fatal(err)
	}
	return st.(*Store)
}

func openSession(t *testing.T, st *Store) store.Session {
	t.Helper()
	se, err := st.Session(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { se.Close() })
	return se
}

func rowMap(t *testing.T, st *Store) map[inventory.RowKey]inventory.Row {
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

var group = inventory.GroupKey{SKU: "sku:1", Condition: "new", Source: "s"}

// Warehouses whose byte order differs from a case-folded or
// locale-collated order: "B" < "a" < "b" < "é".
func groupRows() []inventory.Row {
	return []inventory.Row{
		{Key: group.Row("é"), Count: 5, Price: 400},
		{Key: group.Row("b"), Count: 2, Price: 500},
		{Key: group.Row("a"), Count: 0, Price: 600},
		{Key: group.Row("B"), Count: 1, Price: 700},
		{Key: inventory.RowKey{SKU: "sku", Warehouse: "1:new", Condition: "s", Source: "x"}, Count: 9, Price: 1},
	}
}

func TestCaptureTakesWarehousesInByteOrder(t *testing.T) {
	st := openStore(t, groupRows())
	se := openSession(t, st)
	res, err := se.Capture(context.Background(), group, 6, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []inventory.Line{{Warehouse: "B", Count: 1}, {Warehouse: "b", Count: 2}, {Warehouse: "é", Count: 3}}
	if res.Code != inventory.CodeOK || !slices.Equal(res.Lines, want) {
		t.Fatalf("capture = %+v, want lines %v", res, want)
	}
	rows := rowMap(t, st)
	for w, c := range map[string]int64{"B": 0, "a": 0, "b": 0, "é": 2} {
		if got := rows[group.Row(w)]; got.Count != c {
			t.Errorf("row %q count %d, want %d", w, got.Count, c)
		}
	}
	if got := rows[group.Row("é")].Price; got != 400 {
		t.Errorf("price changed to %d", got)
	}
	if len(rows) != 5 {
		t.Errorf("Rows read %d rows, want 5", len(rows))
	}
}

func TestCaptureInsufficientChangesNothing(t *testing.T) {
	st := openStore(t, groupRows())
	se := openSession(t, st)
	before := rowMap(t, st)
	res, err := se.Capture(context.Background(), group, 9, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Code != inventory.CodeInsufficient || res.Available != 8 {
		t.Fatalf("capture 9 of 8 = %+v, want insufficient with 8 available", res)
	}
	if after := rowMap(t, st); !mapsEqual(before, after) {
		t.Fatalf("rows changed: %v -> %v", before, after)
	}
	res, err = se.Capture(context.Background(), inventory.GroupKey{SKU: "none", Condition: "c", Source: "s"}, 1, nil)
	if err != nil || res.Code != inventory.CodeInsufficient || res.Available != 0 {
		t.Fatalf("capture of an unknown group = %+v, %v", res, err)
	}
}

func mapsEqual(a, b map[inventory.RowKey]inventory.Row) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestReleaseUnknownAndInvalid(t *testing.T) {
	st := openStore(t, groupRows())
	se := openSession(t, st)
	ctx := context.Background()
	res, err := se.Release(ctx, group.Row("z"), 1)
	if err != nil || res.Code != inventory.CodeNotFound {
		t.Fatalf("release to an unknown row = %+v, %v", res, err)
	}
	res, err = se.Release(ctx, group.Row("a"), 3)
	if err != nil || res.Code != inventory.CodeOK || res.Count != 3 {
		t.Fatalf("release 3 to a = %+v, %v", res, err)
	}
	for _, tc := range []struct {
		name string
		k    inventory.RowKey
		n    int64
	}{
		{"zero", group.Row("a"), 0},
		{"too large", group.Row("a"), inventory.QuantityMax + 1},
		{"empty warehouse", group.Row(""), 1},
		{"control char", group.Row("a\x1fb"), 1},
		{"long", group.Row(strings.Repeat("x", 65)), 1},
	} {
		res, err := se.Release(ctx, tc.k, tc.n)
		if err != nil || res.Code != inventory.CodeInvalid || res.Detail == "" {
			t.Errorf("%s: release = %+v, %v; want invalid", tc.name, res, err)
		}
		g := tc.k.Group()
		res, err = se.Capture(ctx, inventory.GroupKey{SKU: g.SKU + "\n", Condition: g.Condition, Source: g.Source}, 1, nil)
		if err != nil || res.Code != inventory.CodeInvalid {
			t.Errorf("%s: capture = %+v, %v; want invalid", tc.name, res, err)
		}
	}
	if got := rowMap(t, st)[group.Row("a")].Count; got != 3 {
		t.Fatalf("row a count %d after invalid ops, want 3", got)
	}
}

// Counts beyond 2^53 do not fit a double: releases and captures on them must
// stay exact, and the overflow bound must be exact to the unit.
func TestLargeCountsAreExact(t *testing.T) {
	const big = 1<<53 + 1
	st := openStore(t, []inventory.Row{
		{Key: group.Row("a"), Count: big, Price: inventory.CountMax},
		{Key: group.Row("b"), Count: inventory.CountMax - 5, Price: 1},
	})
	se := openSession(t, st)
	ctx := context.Background()
	res, err := se.Release(ctx, group.Row("a"), 2)
	if err != nil || res.Code != inventory.CodeOK || res.Count != big+2 {
		t.Fatalf("release 2 to 2^53+1 = %+v, %v; want %d", res, err, int64(big+2))
	}
	res, err = se.Release(ctx, group.Row("b"), 5)
	if err != nil || res.Code != inventory.CodeOK || res.Count != inventory.CountMax {
		t.Fatalf("release up to CountMax = %+v, %v", res, err)
	}
	res, err = se.Release(ctx, group.Row("b"), 1)
	if err != nil || res.Code != inventory.CodeOverflow {
		t.Fatalf("release past CountMax = %+v, %v; want overflow", res, err)
	}
	res, err = se.Capture(ctx, group, 3, nil)
	if err != nil || res.Code != inventory.CodeOK || !slices.Equal(res.Lines, []inventory.Line{{Warehouse: "a", Count: 3}}) {
		t.Fatalf("capture 3 = %+v, %v", res, err)
	}
	rows := rowMap(t, st)
	if got := rows[group.Row("a")]; got.Count != big-1 || got.Price != inventory.CountMax {
		t.Errorf("row a = %+v, want count %d price %d", got, int64(big-1), int64(inventory.CountMax))
	}
	if got := rows[group.Row("b")].Count; got != inventory.CountMax {
		t.Errorf("row b count %d, want CountMax", got)
	}
}

// Concurrent captures on one group never oversell: exactly the stock is
// handed out, and the rows end at zero.
func TestConcurrentCapturesNeverOversell(t *testing.T) {
	const stock, workers, attempts = 60, 8, 20
	st := openStore(t, []inventory.Row{
		{Key: group.Row("a"), Count: stock / 3, Price: 1},
		{Key: group.Row("b"), Count: stock / 3, Price: 1},
		{Key: group.Row("c"), Count: stock / 3, Price: 1},
	})
	var wg sync.WaitGroup
	taken := make([]int64, workers)
	errs := make(chan error, workers)
	for w := range workers {
		se := openSession(t, st)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range attempts {
				res, err := se.Capture(context.Background(), group, 1, nil)
				if err != nil {
					errs <- err
					return
				}
				if res.Code == inventory.CodeOK {
					taken[w]++
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var total int64
	for _, n := range taken {
		total += n
	}
	if total != stock {
		t.Fatalf("%d captures succeeded, stock was %d", total, stock)
	}
	for k, r := range rowMap(t, st) {
		if r.Count != 0 {
			t.Errorf("row %v ends at %d", k, r.Count)
		}
	}
}

func TestLoadReplacesAndDescribe(t *testing.T) {
	st := openStore(t, groupRows())
	if err := st.Load(context.Background(), groupRows()[:1]); err != nil {
		t.Fatal(err)
	}
	if rows := rowMap(t, st); len(rows) != 1 {
		t.Fatalf("after a second Load, %d rows; want 1", len(rows))
	}
	bad := []inventory.Row{{Key: group.Row(""), Count: 1}}
	if err := st.Load(context.Background(), bad); err == nil || !strings.Contains(err.Error(), "warehouse is empty") {
		t.Fatalf("Load of a bad row: %v", err)
	}
	d, err := st.Describe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(d, "appendonly yes, appendfsync no") {
		t.Fatalf("Describe = %q; want the write mode's settings read back", d)
	}
}
