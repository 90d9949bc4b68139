package resp

import (
	"bytes"
	"testing"

	"allot/inventory"
)

// FuzzDecodeCatalogOp: any arguments to the catalog commands decode to an
// op that passes inventory's checks or to an error detail, never a panic;
// a decoded op's reply encodes.
func FuzzDecodeCatalogOp(f *testing.F) {
	for _, seed := range []string{
		"CATALOG.SET\x00s1\x00Größe Jacke\x00ACME\x00size\x00L\x00ID\x00k1",
		"CATALOG.SET\x00s1\x00t\x00b",
		"CATALOG.SET\x00s1\x00t\x00b\x00id\x00",
		"CATALOG.GET\x00s1",
		"CATALOG.DEL\x00s1\x00ID\x00k",
		"SEARCH\x00grö\x00BRAND\x00ac\x00OFFSET\x0010\x00LIMIT\x0020",
		"SEARCH\x00a\x00LIMIT\x000",
		"SEARCH\x00\x00OFFSET\x00-1",
		"search\x00a\x00brand\x00b\x00brand\x00c",
	} {
		f.Add([]byte(seed))
	}
	in := NewStringInterner(64)
	f.Fuzz(func(t *testing.T, b []byte) {
		args := bytes.Split(b, []byte{0})
		name := Lookup(args[0])
		if !isCatalogKind(name.Kind()) {
			return
		}
		var op inventory.Op
		if d := DecodeOp(name, args, in, &op); d != "" {
			return
		}
		if d := op.Check(); d != "" {
			t.Fatalf("decoded op fails its check: %s", d)
		}
		st := inventory.NewState()
		res := st.Apply(&op, nil)
		out := AppendResult(nil, &op, &res)
		if len(out) == 0 || out[len(out)-1] != '\n' {
			t.Fatalf("reply %q", out)
		}
	})
}
