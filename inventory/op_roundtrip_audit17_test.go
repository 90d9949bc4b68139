package inventory

import (
	"reflect"
	"testing"

	"allot/catalog"
)

// TestOpRoundTripAudit17: every journaled kind, with and without an
// idempotency key where it takes one, decodes to the op it was encoded
// from (counts, TTL and quantity at their limits).
func TestOpRoundTripAudit17(t *testing.T) {
	rec := catalog.Record{SKU: "a", Title: "T", Brand: "B", Attributes: []catalog.Attribute{{Name: "z", Value: "1"}, {Name: "b", Value: "2"}}}
	ops := []Op{
		Capture(gk("a"), 3), Release(rk("a", "w"), 2), Stock(rk("a", "w"), CountMax, CountMax),
		Hold("h", HoldTTLMax, []Demand{{gk("a"), 1}, {gk("b"), QuantityMax}}), Confirm("h"), Cancel("h"), Expire("h"),
		Order([]Demand{{gk("a"), 1}, {gk("a"), 2}}), CatalogSet(rec), CatalogDel("a"),
	}
	for _, op := range ops {
		for _, key := range []string{"", "k1"} {
			op := op
			if key != "" {
				if !op.Kind.Keyed() {
					continue
				}
				op.IdempotencyKey = key
			}
			if d := op.Check(); d != "" {
				t.Fatalf("%v: %s", op.Kind, d)
			}
			b := AppendOp(nil, &op)
			d := NewDecoder()
			d.Reset(b)
			var got Op
			if err := d.Op(&got); err != nil || !d.Done() {
				t.Fatalf("%v: %v", op.Kind, err)
			}
			if len(got.Lines) == 0 {
				got.Lines = op.Lines
			}
			if !reflect.DeepEqual(got, op) {
				t.Errorf("%v:\n got %+v\nwant %+v", op.Kind, got, op)
			}
		}
	}
}
