package tarantool

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	gotarantool "github.com/tarantool/go-tarantool/v2"

	"allot/inventory"
	"allot/services/servicestest"
	"allot/store"
	"allot/store/storetest"
)

// requireServer brings the project's Tarantool up and returns the
// durability it runs with: wal_mode is fixed at start, so tests open
// stores in that mode.
func requireServer(t *testing.T) store.Durability {
	t.Helper()
	servicestest.Require(t, "tarantool")
	conn, err := connect(context.Background(), store.Config{Addr: AddrDefault, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var mode []string
	if err := conn.Do(gotarantool.NewEvalRequest("return box.cfg.wal_mode")).GetTyped(&mode); err != nil || len(mode) != 1 {
		t.Fatalf("reading wal_mode: %v %v", mode, err)
	}
	d, err := store.ParseDurability(mode[0])
	if err != nil {
		t.Fatal(err)
	}
	return d
}

var stores = []string{"tarantool", "tarantool-vinyl"}

func TestConformance(t *testing.T) {
	for _, name := range stores {
		t.Run(name, func(t *testing.T) {
			storetest.Run(t, func(t *testing.T) store.Store {
				d := requireServer(t)
				st, err := store.Open(context.Background(), name, store.Config{Durability: d, Workers: 16})
				if err != nil {
					t.Fatal(err)
				}
				return st
			})
		})
	}
}

func openStore(t *testing.T, name string, rows []inventory.Row) *Store {
	t.Helper()
	d := requireServer(t)
	st, err := store.Open(context.Background(), name, store.Config{Durability: d, Workers: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Load(context.Background(), rows); err != nil {
		t.Fatal(err)
	}
	return st.(*Store)
}

func openSession(t *testing.T, st *Store) *session {
	t.Helper()
	se, err := st.Session(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { se.Close() })
	return se.(*session)
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

// Counts beyond 2^53 do not fit a double: releases and captures on them
// must stay exact, and the overflow bound must be exact to the unit.
func TestLargeCountsAreExact(t *testing.T) {
	const big = 1<<53 + 1
	for _, name := range stores {
		t.Run(name, func(t *testing.T) {
			st := openStore(t, name, []inventory.Row{
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
		})
	}
}

func TestDescribeReadsSettingsBack(t *testing.T) {
	for _, name := range stores {
		t.Run(name, func(t *testing.T) {
			st := openStore(t, name, nil)
			d, err := st.Describe(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(d, "tarantool 2") || !strings.Contains(d, "engine "+st.engine.name+", wal_mode "+string(st.cfg.Durability)) {
				t.Fatalf("Describe = %q; want the version, the engine and wal_mode read back", d)
			}
		})
	}
}

// Rows pages through more rows than one page holds.
func TestRowsPages(t *testing.T) {
	rows := make([]inventory.Row, rowsPageMax+7)
	for i := range rows {
		rows[i] = inventory.Row{Key: inventory.RowKey{SKU: "s", Warehouse: string(rune('a'+i%26)) + strings.Repeat("w", i/26%60), Condition: "c", Source: string(rune('A' + i/(26*60)))}, Count: int64(i), Price: 1}
	}
	st := openStore(t, "tarantool", rows)
	got, err := st.Rows(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(rows) {
		t.Fatalf("Rows read %d rows, want %d", len(got), len(rows))
	}
}

func TestDurabilityMismatch(t *testing.T) {
	running := requireServer(t)
	other := store.DurabilityFsync
	if running == other {
		other = store.DurabilityWrite
	}
	_, err := store.Open(context.Background(), "tarantool", store.Config{Durability: other})
	if !errors.Is(err, store.ErrDurabilityMismatch) || !strings.Contains(err.Error(), "wal_mode "+string(running)) || !strings.Contains(err.Error(), "durability "+string(other)) {
		t.Fatalf("open with fsync against a write server: %v; want ErrDurabilityMismatch naming both", err)
	}
}

// A vinyl transaction whose read row is changed by another committed
// transaction is aborted; atomically must run it again and count it.
func TestVinylConflictIsRetriedAndCounted(t *testing.T) {
	st := openStore(t, "tarantool-vinyl", []inventory.Row{{Key: group.Row("a"), Count: 10, Price: 1}})
	const script = `
local fiber = require('fiber')
local space = box.space[...]
local key = {'sku:1', 'a', 'new', 's'}
local runs = 0
local reply = allot.atomically(function()
    runs = runs + 1
    local count = space:get(key)[5]
    if runs == 1 then
        -- another writer commits a change to the row this one has read
        fiber.create(function() space:update(key, {{'+', 5, 100}}) end)
        fiber.sleep(0.05)
    end
    space:update(key, {{'=', 5, count - 1}})
    return {0, 0}
end)
return reply[2], runs, space:get(key)[5]`
	var got []int64
	if err := st.conn.Do(gotarantool.NewEvalRequest(script).Args([]any{st.engine.space})).GetTyped(&got); err != nil {
		t.Fatal(err)
	}
	// The retry read 110 and wrote 109; a lost update would leave 9.
	if len(got) != 3 || got[0] != 1 || got[1] != 2 || got[2] != 109 {
		t.Fatalf("conflicts, runs, count = %v; want [1 2 109]", got)
	}
}
