package bench

import (
	"slices"
	"testing"

	"allot/inventory"
	"allot/workload"
)

func TestOutcomesPackAndSpill(t *testing.T) {
	w := genWorkload(t, "hot", 100)
	p, err := NewPlan(w)
	if err != nil {
		t.Fatal(err)
	}
	capture := slices.IndexFunc(w.Ops, func(op workload.Op) bool { return op.Kind == inventory.KindCapture })
	o := NewOutcomes(p)
	for _, lines := range [][]inventory.Line{
		{{Warehouse: "w1", Count: 1}, {Warehouse: "w3", Count: 2}}, // packed
		{{Warehouse: "w9", Count: 1}},                              // not in the group
		{{Warehouse: "w1", Count: 0}},                              // not positive
		{{Warehouse: "w1", Count: 1 << 40}},                        // beyond 32 bits
		{{Warehouse: "w1", Count: 1}, {Warehouse: "w2", Count: 1}, {Warehouse: "w3", Count: 1}, {Warehouse: "w4", Count: 1}, {Warehouse: "w1", Count: 1}}, // too many
		{}, // none
	} {
		o.Record(capture, OpApplied, lines)
		if got := o.Lines(capture); !slices.Equal(got, lines) && !(len(got) == 0 && len(lines) == 0) {
			t.Fatalf("recorded %v, read back %v", lines, got)
		}
		if o.Status(capture) != OpApplied {
			t.Fatal("status lost")
		}
	}
}
