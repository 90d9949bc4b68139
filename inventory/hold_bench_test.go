package inventory

import (
	"fmt"
	"testing"
)

// BenchmarkHoldConfirm measures the state machine alone on the checkout
// benchmark's carts (server BenchmarkCheckoutPipelined): a 3-line hold
// over 30 groups of 3 rows, then its confirm, the clock moving 1 ms every
// 100 carts. Holds are retained for the default retention window, as on a
// server, so the state grows as a real one does.
func BenchmarkHoldConfirm(b *testing.B) {
	s := NewState()
	groups := make([]GroupKey, 30)
	for i := range groups {
		groups[i] = GroupKey{SKU: fmt.Sprintf("sku-%d", i), Condition: "new", Source: "supplier"}
		for _, w := range []string{"w1", "w2", "w3"} {
			op := Stock(groups[i].Row(w), CountMax/4, 100)
			s.Apply(&op, nil)
		}
	}
	ids := make([]string, b.N)
	for i := range ids {
		ids[i] = fmt.Sprintf("cart-%d", i)
	}
	lines := make([]Demand, 3)
	buf := &Buffers{Allocations: make([]Allocation, 0, 8)} // as a server connection lends it
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%100 == 0 {
			s.SetTime(int64(1_000_000 + i/100))
		}
		for j := range lines {
			lines[j] = Demand{Group: groups[(i*3+j)%len(groups)], N: 1 + int64(i+j)%3}
		}
		hold := Hold(ids[i], 600_000, lines)
		if r := s.ApplyInto(&hold, nil, buf); r.Code != CodeOK {
			b.Fatal(r)
		}
		confirm := Confirm(ids[i])
		if r := s.Apply(&confirm, nil); r.Code != CodeOK {
			b.Fatal(r)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "carts/s")
}

// ApplyInto builds a hold's reply in the lent buffer, and a hold keeps no
// reply of its own: a repeat after the confirm, and HOLD.GET, rebuild the
// same allocations from what the hold keeps.
func TestApplyIntoLendsAllocations(t *testing.T) {
	s := NewState()
	g := GroupKey{SKU: "a", Condition: "new", Source: "own"}
	for _, w := range []string{"w1", "w2"} {
		op := Stock(g.Row(w), 2, 100)
		s.Apply(&op, nil)
	}
	buf := make([]Allocation, 0, 8)
	lent := &Buffers{Allocations: buf}
	lines := []Demand{{Group: g, N: 3}}
	hold := Hold("h1", 60_000, lines)
	res := s.ApplyInto(&hold, nil, lent)
	if res.Code != CodeOK || len(res.Allocations) != 2 || &res.Allocations[0] != &buf[:1][0] {
		t.Fatalf("hold: %+v, want two allocations in the lent buffer", res)
	}
	first := append([]Allocation(nil), res.Allocations...)
	if n := testing.AllocsPerRun(100, func() {
		get := HoldGet("h1")
		s.ApplyInto(&get, nil, lent)
	}); n != 0 {
		t.Fatalf("HOLD.GET into a lent buffer allocated %v times", n)
	}
	confirm := Confirm("h1")
	if r := s.Apply(&confirm, nil); r.Code != CodeOK {
		t.Fatal(r)
	}
	again := s.Apply(&hold, nil)
	if !again.Repeat || len(again.Allocations) != len(first) {
		t.Fatalf("repeat: %+v", again)
	}
	for i := range first {
		if again.Allocations[i] != first[i] {
			t.Fatalf("repeat allocation %d = %+v, want %+v", i, again.Allocations[i], first[i])
		}
	}
	if &again.Allocations[0] == &buf[:1][0] {
		t.Fatal("Apply without a buffer answered in the lent one")
	}
}

// ApplyCheckedInto skips the check for one op only: the next ApplyInto
// checks again.
func TestApplyCheckedIntoChecksNextOp(t *testing.T) {
	s := NewState()
	g := GroupKey{SKU: "a", Condition: "new", Source: "own"}
	stock := Stock(g.Row("w1"), 5, 1)
	if r := s.ApplyCheckedInto(&stock, nil, nil); r.Code != CodeOK {
		t.Fatal(r)
	}
	bad := Capture(g, 0)
	if r := s.ApplyInto(&bad, nil, nil); r.Code != CodeInvalid {
		t.Fatalf("an invalid op after a checked one: %+v, want invalid", r)
	}
}
