package server

import (
	"encoding/json"
	"reflect"
	"testing"

	"allot/inventory"
)

// FuzzCheckoutBody feeds arbitrary bytes to the hold and order body
// decoders: they never panic, never accept what the domain rejects, and
// what they accept re-encodes to a body that decodes to the same op.
func FuzzCheckoutBody(f *testing.F) {
	f.Add(true, []byte(`{"hold":"h1","ttl_ms":600000,"lines":[{"sku":"s","condition":"new","source":"r","quantity":2},{"sku":"s","condition":"new","source":"r","quantity":1}]}`))
	f.Add(false, []byte(`{"lines":[{"sku":"s","condition":"new","source":"r","quantity":1}]}`))
	f.Add(true, []byte(`{"hold":"h1","ttl_ms":0,"lines":[]}`))
	f.Add(false, []byte(`{"lines":{}}`))
	f.Add(true, []byte(`{"hold":1,"ttl_ms":1.5,"lines":[{"sku":"s"}],"x":1}`))
	f.Fuzz(func(t *testing.T, hold bool, body []byte) {
		kind := inventory.KindOrder
		if hold {
			kind = inventory.KindHold
		}
		var op inventory.Op
		if d := decodeCheckoutBody(kind, body, &op); d != "" {
			return
		}
		if d := op.Check(); d != "" {
			t.Fatalf("accepted %q, which the domain rejects: %s", body, d)
		}
		type line struct {
			SKU       string `json:"sku"`
			Condition string `json:"condition"`
			Source    string `json:"source"`
			Quantity  int64  `json:"quantity"`
		}
		m := map[string]any{}
		var lines []line
		for _, l := range op.Lines {
			lines = append(lines, line{l.Group.SKU, l.Group.Condition, l.Group.Source, l.N})
		}
		m["lines"] = lines
		if hold {
			m["hold"], m["ttl_ms"] = op.Hold, op.TTL
		}
		again, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		var op2 inventory.Op
		if d := decodeCheckoutBody(kind, again, &op2); d != "" || !reflect.DeepEqual(op, op2) {
			t.Fatalf("op %+v re-encoded as %s decodes to %+v (%q)", op, again, op2, d)
		}
	})
}
