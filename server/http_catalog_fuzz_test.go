package server

import (
	"testing"

	"allot/inventory"
)

// FuzzDecodeCatalogBody: any PUT /v1/catalog body decodes to a record that
// passes the op's check or to a detail, never a panic.
func FuzzDecodeCatalogBody(f *testing.F) {
	for _, s := range []string{
		`{"title":"Größe Jacke","brand":"ACME","attributes":{"size":"L"}}`,
		`{"title":"","brand":"b","attributes":{}}`,
		`{"title":"t","brand":"b","attributes":{"a":1}}`,
		`{"title":"t","brand":"b"}`,
		`[]`, ``, `{"title":"t\u0000","brand":"b","attributes":{}}`,
	} {
		f.Add("s1", []byte(s))
	}
	f.Fuzz(func(t *testing.T, sku string, body []byte) {
		rec, d := decodeCatalogBody(sku, body)
		if d != "" {
			return
		}
		op := inventory.CatalogSet(rec)
		if d := op.Check(); d != "" {
			return
		}
		st := inventory.NewState()
		if res := st.Apply(&op, nil); res.Code != inventory.CodeOK {
			t.Fatalf("a checked record was refused: %+v", res)
		}
	})
}
