package resp

import (
	"slices"
	"testing"

	"allot/inventory"
)

// FuzzRESPCommand feeds arbitrary bytes to the decoder and decodes every
// command it yields as the server would. It checks that nothing panics, that
// the outcome does not depend on how the bytes are split into reads, that
// every command respects the limits, that a command re-encoded decodes to
// the same arguments (when it fits the limit), and that an op which decodes cleanly passes the
// domain's own check.
func FuzzRESPCommand(f *testing.F) {
	seeds := []string{
		// What redis-cli, go-redis and redis-benchmark send.
		"*1\r\n$7\r\nCOMMAND\r\n",
		"*2\r\n$7\r\nCOMMAND\r\n$4\r\nDOCS\r\n",
		"*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n",
		"*5\r\n$5\r\nHELLO\r\n$1\r\n2\r\n$4\r\nAUTH\r\n$7\r\ndefault\r\n$6\r\nsecret\r\n",
		"*4\r\n$6\r\nCLIENT\r\n$7\r\nSETINFO\r\n$8\r\nLIB-NAME\r\n$8\r\ngo-redis\r\n",
		"*3\r\n$6\r\nCLIENT\r\n$7\r\nSETNAME\r\n$3\r\ncli\r\n",
		"*2\r\n$4\r\nAUTH\r\n$6\r\nsecret\r\n",
		"*1\r\n$4\r\nPING\r\n*1\r\n$4\r\nQUIT\r\n",
		"*5\r\n$7\r\nCAPTURE\r\n$5\r\nsku-1\r\n$3\r\nnew\r\n$6\r\nretail\r\n$1\r\n2\r\n",
		"*6\r\n$7\r\nRELEASE\r\n$5\r\nsku-1\r\n$2\r\nw1\r\n$3\r\nnew\r\n$6\r\nretail\r\n$1\r\n1\r\n",
		"*7\r\n$9\r\nSTOCK.SET\r\n$5\r\nsku-1\r\n$2\r\nw1\r\n$3\r\nnew\r\n$6\r\nretail\r\n$2\r\n10\r\n$3\r\n999\r\n",
		"*5\r\n$9\r\nSTOCK.GET\r\n$5\r\nsku-1\r\n$2\r\nw1\r\n$3\r\nnew\r\n$6\r\nretail\r\n",
		"*4\r\n$9\r\nAVAILABLE\r\n$5\r\nsku-1\r\n$3\r\nnew\r\n$6\r\nretail\r\n",
		"CAPTURE sku-1 new retail 2\r\nPING\r\n",
		"CAPTURE sku-1 new retail 2 ID order-7\r\n",
		"HOLD cart-1 600000 sku-1 new retail 2 sku-2 new retail 1 sku-1 new retail 1\r\n",
		"ORDER sku-1 new retail 2 sku-2 new retail 1 ID o-1\r\n",
		"CONFIRM cart-1\r\nCANCEL cart-1\r\nHOLD.GET cart-1\r\n",
		"capture sku-1 new retail 99999999999999999999\r\n",
		"*1\r\n$9223372036854775807\r\nabc\r\n",
		"*1\r\n$-2\r\nxx",
		"*3\r\n$4\r\nPING\r\n$2\r\nhi",
		"*100\r\n$1\r\na\r\n",
		"\x00\xff\r\n*1\r\n",
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	limits := Limits{CommandBytesMax: 256, ArgsMax: 8}
	f.Fuzz(func(t *testing.T, in []byte) {
		whole, _ := decodeStream(t, limits, in, len(in)+1)
		for _, chunk := range []int{1, 5} {
			split, _ := decodeStream(t, limits, in, chunk)
			if !slices.EqualFunc(whole, split, func(a, b event) bool { return a.String() == b.String() }) {
				t.Fatalf("reads of %d bytes decode differently:\n whole: %v\n split: %v", chunk, whole, split)
			}
		}
		interner := NewStringInterner(64)
		for _, e := range whole {
			if e.err != "" {
				continue
			}
			// An inline command may be shorter than its multibulk form:
			// only re-encodings within the limit must come back.
			encoded := appendCommand(nil, e.args)
			again, rest := decodeStream(t, limits, encoded, 3)
			if len(encoded) <= limits.CommandBytesMax && (rest != 0 || len(again) != 1 || !slices.Equal(again[0].args, e.args)) {
				t.Fatalf("command %q re-encoded decodes to %v (rest %d)", e.args, again, rest)
			}
			args := make([][]byte, len(e.args))
			for i, a := range e.args {
				args[i] = []byte(a)
			}
			name := Lookup(args[0])
			if name.Kind() == 0 {
				continue
			}
			var op inventory.Op
			if detail := DecodeOp(name, args, interner, &op); detail == "" {
				if d := op.Check(); d != "" {
					t.Fatalf("command %q decoded to op %+v that fails its check: %s", e.args, op, d)
				}
				st := inventory.NewState()
				r := st.Apply(&op, nil)
				_ = AppendResult(nil, &op, &r)
			}
		}
	})
}

// FuzzReadHeader checks readHeader's one-pass common case against its
// general path: the same number, end, completeness and error for any
// bytes at any offset.
func FuzzReadHeader(f *testing.F) {
	for _, s := range []string{"$5\r\n", "*3\r\n$3", "$-1\r\n", "$12x\r\n", "$1234567890123456789\r\n",
		"$123456789012345678\r\n", "$007\r\n", "$\r\n", "$5\r", "$5\n", "*" + "99999999999999999999999999"} {
		f.Add([]byte(s), 0)
	}
	f.Fuzz(func(t *testing.T, b []byte, i int) {
		if i < 0 || i >= len(b) {
			return
		}
		v, next, ok, err := readHeader(b, i, errBulkLength)
		wv, wnext, wok, werr := readHeaderLine(b, i, errBulkLength)
		if v != wv || next != wnext || ok != wok || err != werr {
			t.Fatalf("readHeader(%q, %d) = %d %d %v %v; general path: %d %d %v %v", b, i, v, next, ok, err, wv, wnext, wok, werr)
		}
		if b[i] != '*' && b[i] != '$' {
			return // the decoder asks oneDigitHeader at a header's type byte only
		}
		if ov, onext, ook := oneDigitHeader(b, i); ook && (ov != wv || onext != wnext || !wok) {
			t.Fatalf("oneDigitHeader(%q, %d) = %d %d; general path: %d %d %v %v", b, i, ov, onext, wv, wnext, wok, werr)
		}
	})
}
