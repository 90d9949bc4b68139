package server

import (
	"encoding/json"
	"reflect"
	"testing"

	"allot/inventory"
)

// FuzzHTTPBody feeds arbitrary bodies to the decoder of each op endpoint.
// It checks that nothing panics, that a body is either refused with a
// detail or yields an op that passes the domain's check, and that an
// accepted op encoded back to JSON decodes to the same op.
func FuzzHTTPBody(f *testing.F) {
	seeds := []string{
		`{"sku":"sku-1","condition":"new","source":"retail","quantity":3}`,
		`{"sku":"sku-1","warehouse":"w1","condition":"new","source":"retail","quantity":2}`,
		`{"sku":"sku-1","warehouse":"w1","condition":"new","source":"retail","count":5,"price":100}`,
		`{"sku":"sku-1","condition":"new","source":"retail","quantity":1.5}`,
		`{"sku":"sku-1","condition":"new","source":"retail","quantity":"1"}`,
		`{"sku":"","condition":"new\u0001","source":"retail","quantity":1}`,
		`{"sku":"sku-1","condition":"new","source":"retail","quantity":1} {}`,
		`{"sku":"sku-1","sku":"sku-2","condition":"new","source":"retail","quantity":1}`,
		`[1,2]`, `null`, ``, `{`, `{"quantity":99999999999999999999}`,
		"{\"sku\":\"\xff\",\"condition\":\"c\",\"source\":\"s\",\"quantity\":1}",
	}
	for _, s := range seeds {
		for k := inventory.KindCapture; k <= inventory.KindStock; k++ {
			f.Add(uint8(k), []byte(s))
		}
	}
	f.Fuzz(func(t *testing.T, kind uint8, body []byte) {
		k := inventory.Kind(kind%3 + 1)
		var op inventory.Op
		detail := decodeOpBody(k, body, &op)
		if detail != "" {
			return
		}
		if d := op.Check(); d != "" {
			t.Fatalf("accepted body %q gives op %+v that fails its check: %s", body, op, d)
		}
		if op.Kind != k {
			t.Fatalf("body for %v decoded to a %v", k, op.Kind)
		}
		m := map[string]any{"sku": op.Key.SKU, "condition": op.Key.Condition, "source": op.Key.Source}
		switch k {
		case inventory.KindCapture:
			m["quantity"] = op.N
		case inventory.KindRelease:
			m["warehouse"], m["quantity"] = op.Key.Warehouse, op.N
		case inventory.KindStock:
			m["warehouse"], m["count"], m["price"] = op.Key.Warehouse, op.N, op.Price
		}
		again, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		var op2 inventory.Op
		if d := decodeOpBody(k, again, &op2); d != "" || !reflect.DeepEqual(op2, op) {
			t.Fatalf("op %+v re-encoded as %s decodes to %+v (%q)", op, again, op2, d)
		}
	})
}
