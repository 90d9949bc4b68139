package store

import (
	"strings"
	"testing"
	"time"

	"allot/inventory"
)

func TestSumCartSumsSameGroupInFirstLineOrder(t *testing.T) {
	a := inventory.GroupKey{SKU: "a", Condition: "new", Source: "s"}
	b := inventory.GroupKey{SKU: "b", Condition: "new", Source: "s"}
	got := SumCart([]CartLine{{a, 1}, {b, 2}, {a, 3}}, nil)
	want := []Demand{{Group: a, N: 4, First: 0}, {Group: b, N: 2, First: 1}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("SumCart = %+v, want %+v", got, want)
	}
}

func TestAllocateCart(t *testing.T) {
	a := inventory.GroupKey{SKU: "a", Condition: "new", Source: "s"}
	b := inventory.GroupKey{SKU: "b", Condition: "new", Source: "s"}
	stock := map[inventory.GroupKey][]inventory.Line{
		a: {{Warehouse: "w1", Count: 2}, {Warehouse: "w2", Count: 5}},
		b: {{Warehouse: "w1", Count: 1}},
	}
	var res HoldResult
	alloc := func(lines []CartLine) {
		d := SumCart(lines, nil)
		AllocateCart(d, func(i int) []inventory.Line { return stock[d[i].Group] }, &res)
	}
	alloc([]CartLine{{b, 1}, {a, 2}, {a, 1}})
	want := []HoldLine{{b.Row("w1"), 1}, {a.Row("w1"), 2}, {a.Row("w2"), 1}}
	if res.Code != CheckoutOK || len(res.Lines) != 3 || res.Lines[0] != want[0] || res.Lines[1] != want[1] || res.Lines[2] != want[2] {
		t.Fatalf("got %+v, want ok %+v", res, want)
	}
	// Same group twice: 4 + 4 > 7 even though each line alone fits.
	alloc([]CartLine{{b, 1}, {a, 4}, {a, 4}})
	if res.Code != CheckoutInsufficient || res.Short != 1 || res.Available != 7 || len(res.Lines) != 0 {
		t.Fatalf("summed lines: got %+v, want insufficient at line 1 with 7 available", res)
	}
	unknown := inventory.GroupKey{SKU: "x", Condition: "new", Source: "s"}
	alloc([]CartLine{{a, 1}, {unknown, 1}})
	if res.Code != CheckoutInsufficient || res.Short != 1 || res.Available != 0 {
		t.Fatalf("unknown group: got %+v", res)
	}
}

func TestCheckHold(t *testing.T) {
	g := inventory.GroupKey{SKU: "a", Condition: "new", Source: "s"}
	ok := []CartLine{{g, 1}}
	long := make([]CartLine, CartLinesMax+1)
	for i := range long {
		long[i] = CartLine{g, 1}
	}
	for _, tc := range []struct {
		hold  string
		ttl   time.Duration
		lines []CartLine
		want  string
	}{
		{"h", time.Second, ok, ""},
		{"h", HoldTTLMax, long[:CartLinesMax], ""},
		{"", time.Second, ok, "hold id is empty"},
		{"h", 0, ok, "ttl"},
		{"h", HoldTTLMax + time.Millisecond, ok, "ttl"},
		{"h", time.Second, nil, "at least one line"},
		{"h", time.Second, long, "at most 64 lines"},
		{"h", time.Second, []CartLine{{g, 0}}, "line 1: quantity"},
		{"h", time.Second, []CartLine{{g, 1}, {inventory.GroupKey{SKU: "a"}, 1}}, "line 2: condition is empty"},
	} {
		got := CheckHold(tc.hold, tc.ttl, tc.lines)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("CheckHold(%q, %v, %d lines) = %q, want %q", tc.hold, tc.ttl, len(tc.lines), got, tc.want)
		}
	}
}
