package redis

import (
	"testing"

	"allot/inventory"
)

func TestRowKeyRoundTrip(t *testing.T) {
	for _, k := range []inventory.RowKey{
		{SKU: "a", Warehouse: "b", Condition: "c", Source: "d"},
		{SKU: "a:b", Warehouse: ":", Condition: "{x}", Source: "*?[]"},
		{SKU: "é", Warehouse: "倉庫", Condition: "new", Source: "ü"},
	} {
		got, ok := parseRowKey(rowKey(k))
		if !ok || got != k {
			t.Errorf("parseRowKey(rowKey(%v)) = %v, %v", k, got, ok)
		}
	}
}

// Ids that would collide under a naive ":"-joined key must get distinct
// keys.
func TestRowKeysDoNotCollide(t *testing.T) {
	a := inventory.RowKey{SKU: "a:b", Warehouse: "c", Condition: "d", Source: "e"}
	b := inventory.RowKey{SKU: "a", Warehouse: "b:c", Condition: "d", Source: "e"}
	if rowKey(a) == rowKey(b) {
		t.Fatalf("rows %v and %v share key %q", a, b, rowKey(a))
	}
	ga := inventory.GroupKey{SKU: "a:b", Condition: "c", Source: "d"}
	gb := inventory.GroupKey{SKU: "a", Condition: "b:c", Source: "d"}
	if groupKey(ga) == groupKey(gb) {
		t.Fatalf("groups %v and %v share key %q", ga, gb, groupKey(ga))
	}
}

func TestRowKeyAroundMatchesRowKey(t *testing.T) {
	k := inventory.RowKey{SKU: "s", Warehouse: "w", Condition: "c", Source: "o"}
	before, after := rowKeyAround(k.Group())
	if got := before + k.Warehouse + after; got != rowKey(k) {
		t.Fatalf("capture builds %q, release uses %q", got, rowKey(k))
	}
}

func FuzzParseRowKey(f *testing.F) {
	f.Add("s", "w", "c", "o")
	f.Add("a:b", "\x1f", "", "x")
	f.Fuzz(func(t *testing.T, sku, warehouse, condition, source string) {
		k := inventory.RowKey{SKU: sku, Warehouse: warehouse, Condition: condition, Source: source}
		got, ok := parseRowKey(rowKey(k))
		if inventory.CheckRowKey(k) != "" {
			return // invalid ids never reach a key
		}
		if !ok || got != k {
			t.Fatalf("parseRowKey(rowKey(%v)) = %v, %v", k, got, ok)
		}
	})
}
