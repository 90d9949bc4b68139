package inventory

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func TestAllocate(t *testing.T) {
	stock := []Line{{"a", 0}, {"b", 2}, {"c", 5}}
	if res := Allocate(stock, 4, nil); res.Code != CodeOK || !slices.Equal(res.Lines, []Line{{"b", 2}, {"c", 2}}) {
		t.Fatalf("got %+v", res)
	}
	if res := Allocate(stock, 8, nil); res.Code != CodeInsufficient || res.Available != 7 {
		t.Fatalf("got %+v", res)
	}
	if res := Allocate(nil, 1, nil); res.Code != CodeInsufficient || res.Available != 0 {
		t.Fatalf("got %+v", res)
	}
	huge := []Line{{"a", CountMax}, {"b", CountMax}, {"c", CountMax}}
	if res := Allocate(huge, QuantityMax, nil); res.Code != CodeOK || !slices.Equal(res.Lines, []Line{{"a", QuantityMax}}) {
		t.Fatalf("got %+v", res)
	}
	if res := Allocate(huge[:1], QuantityMax, nil); res.Code != CodeOK {
		t.Fatalf("got %+v", res)
	}
}

// TestAllocateAgreesWithState holds the two implementations of the rule to
// the same answers on random groups.
func TestAllocateAgreesWithState(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	for i := 0; i < 2000; i++ {
		s := NewState()
		var stock []Line
		for _, w := range []string{"W", "a", "b", "c"} {
			if rng.IntN(4) == 0 {
				continue
			}
			c := rng.Int64N(6)
			op := Stock(RowKey{"s", w, "c", "o"}, c, 1)
			s.Apply(&op, nil)
			stock = append(stock, Line{w, c})
		}
		n := 1 + rng.Int64N(12)
		op := Capture(GroupKey{"s", "c", "o"}, n)
		got, want := s.Apply(&op, nil), Allocate(stock, n, nil)
		if len(got.Lines) == 0 {
			got.Lines = nil
		}
		if len(want.Lines) == 0 {
			want.Lines = nil
		}
		if !resultsEqual(got, want) {
			t.Fatalf("stock %v n %d: state %+v, Allocate %+v", stock, n, got, want)
		}
	}
}
