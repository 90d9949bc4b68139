package inventory

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestLookupGroupSlots: keys that share a slot of the state's recent
// groups (same lengths, same first, middle and last bytes) and equal keys
// made of other strings each find their own group, however they
// interleave; a group missing when first asked is found once stocked.
func TestLookupGroupSlots(t *testing.T) {
	s := NewState()
	// "a?b?a": the bytes that pick a slot are the same for every SKU.
	var skus []string
	for _, x := range "cdefgh" {
		for _, y := range "pqrs" {
			skus = append(skus, "a"+string(x)+"b"+string(y)+"a")
		}
	}
	key := func(sku string) GroupKey {
		// Strings of their own each time: equal keys, other pointers.
		return GroupKey{SKU: strings.Clone(sku), Condition: strings.Clone("new"), Source: strings.Clone("s1")}
	}
	var res Result
	for _, sku := range skus[:len(skus)/2] {
		// Asked through Apply, which goes through the cache: a miss
		// must not be remembered.
		op := Available(key(sku))
		if r := s.Apply(&op, nil); r.Count != 0 {
			t.Fatalf("available %s before any stock: %d", sku, r.Count)
		}
	}
	want := map[string]int64{}
	for i, sku := range skus {
		s.stock(key(sku).Row("w1"), int64(1000+i), 1, &res)
		want[sku] = int64(1000 + i)
	}
	// The last one asked before it was stocked (its slot's last key).
	last := skus[len(skus)/2-1]
	if op := Available(key(last)); s.Apply(&op, nil).Count != want[last] {
		t.Fatalf("available %s once stocked: want %d (a miss was remembered?)", last, want[last])
	}
	rng := rand.New(rand.NewPCG(19, 1))
	lines := make([]Line, 0, 4)
	for i := 0; i < 5000; i++ {
		sku := skus[rng.IntN(len(skus))]
		k := key(sku)
		if rng.IntN(2) == 0 {
			k = GroupKey{SKU: sku, Condition: "new", Source: "s1"}
		}
		switch rng.IntN(3) {
		case 0:
			op := Capture(k, 1)
			if r := s.Apply(&op, lines); r.Code != CodeOK || len(r.Lines) != 1 || r.Lines[0].Count != 1 {
				t.Fatalf("op %d: capture %s: %+v", i, sku, r)
			}
			want[sku]--
		case 1:
			op := Available(k)
			if r := s.Apply(&op, nil); r.Count != want[sku] {
				t.Fatalf("op %d: available %s = %d, want %d", i, sku, r.Count, want[sku])
			}
		default:
			if got := s.Available(k); got != want[sku] {
				t.Fatalf("op %d: Available(%s) = %d, want %d", i, sku, got, want[sku])
			}
		}
	}
	// Another condition or source of the same SKU is another group, asked
	// right after the SKU's group was found (so its slot holds that one).
	for _, other := range []GroupKey{{SKU: skus[0], Condition: "old", Source: "s1"}, {SKU: skus[0], Condition: "new", Source: "s2"}} {
		op := Available(key(skus[0]))
		if r := s.Apply(&op, nil); r.Count != want[skus[0]] {
			t.Fatalf("available %s = %d, want %d", skus[0], r.Count, want[skus[0]])
		}
		op = Available(other)
		if r := s.Apply(&op, nil); r.Count != 0 {
			t.Fatalf("available %v: %d, want 0 (no such group)", other, r.Count)
		}
		op = Capture(other, 1)
		if r := s.Apply(&op, nil); r.Code != CodeInsufficient {
			t.Fatalf("capture of %v: %+v, want insufficient", other, r)
		}
	}
	if err := s.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}

// TestCheckValidKeyMatchesCheck: for an op whose key's identifiers are
// valid, CheckValidKey answers what Check answers, for every kind and
// whatever else is wrong with the op (quantity, count, price,
// idempotency key, hold id, lines).
func TestCheckValidKeyMatchesCheck(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 2))
	ints := []int64{-1, 0, 1, 7, QuantityMax, QuantityMax + 1, CountMax, CountMax + 1}
	keys := []string{"", "k1", "bad\x01key", strings.Repeat("k", IDBytesMax+1), "\xff"}
	holds := []string{"", "h1", "bad\nhold"}
	for i := 0; i < 20000; i++ {
		op := Op{
			Kind:           Kind(rng.IntN(kindMax + 2)),
			Key:            RowKey{SKU: "sku", Warehouse: "w1", Condition: "new", Source: "retail"},
			N:              ints[rng.IntN(len(ints))],
			Price:          ints[rng.IntN(len(ints))],
			IdempotencyKey: keys[rng.IntN(len(keys))],
			Hold:           holds[rng.IntN(len(holds))],
			TTL:            ints[rng.IntN(len(ints))],
		}
		if rng.IntN(2) == 0 {
			op.Lines = []Demand{{Group: GroupKey{SKU: "sku", Condition: "new", Source: "retail"}, N: ints[rng.IntN(len(ints))]}}
		}
		if got, want := op.CheckValidKey(), op.Check(); got != want {
			t.Fatalf("%s: CheckValidKey %q, Check %q (op %s)", op.Kind, got, want, fmt.Sprintf("%+v", op))
		}
	}
}
