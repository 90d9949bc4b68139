package resp

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"allot/inventory"
)

// TestInternIDValidity: InternID says whether a string is a valid
// identifier the same way inventory.CheckID does, the first time it sees
// the string and every time after (from its recent slots, from its table,
// and once the table is full); it remembers valid identifiers only.
func TestInternIDValidity(t *testing.T) {
	in := NewStringInterner(6)
	ids := []string{
		"sku", "new", "retail", "w1", "ünïcode", strings.Repeat("x", inventory.IDBytesMax),
		// Past the table's bound: answered, not remembered.
		"late-1", "late-2",
		// Invalid ones: never remembered, whatever room is left.
		"", "a\x01b", "tab\there", "del\x7f", "n\xffew", "c1\u0085", strings.Repeat("y", inventory.IDBytesMax+1),
	}
	for round := range 4 {
		for _, id := range ids {
			s, valid := in.InternID([]byte(id))
			if s != id || valid != (inventory.CheckID(id) == "") {
				t.Fatalf("round %d: InternID(%q) = %q, %v; CheckID says %q", round, id, s, valid, inventory.CheckID(id))
			}
			if got := in.Intern([]byte(id)); got != id {
				t.Fatalf("round %d: Intern(%q) = %q", round, id, got)
			}
		}
	}
	for s := range in.table {
		if inventory.CheckID(s) != "" {
			t.Fatalf("the table remembers %q, no valid identifier", s)
		}
	}
	for _, s := range in.recent {
		if s != "" && inventory.CheckID(s) != "" {
			t.Fatalf("a recent slot remembers %q, no valid identifier", s)
		}
	}
	if len(in.table) != 6 {
		t.Fatalf("table holds %d strings, want its bound 6", len(in.table))
	}
}

// TestDecodeOpRepeatedInvalidIDs: an op whose identifier is invalid is
// refused with the op's check's detail on every try, not only the first
// (the interner knows valid identifiers only), and the same identifiers
// made valid again decode.
func TestDecodeOpRepeatedInvalidIDs(t *testing.T) {
	in := NewStringInterner(4)
	cases := []struct{ in, detail string }{
		{"CAPTURE s\x01 new retail 1", "sku contains a control character"},
		{"CAPTURE s new\x7f retail 1", "condition contains a control character"},
		{"AVAILABLE s new re\xfftail", "source is not valid UTF-8"},
		{"RELEASE s w\x02 c o 1", "warehouse contains a control character"},
		{"STOCK.SET s w c o\x03 1 1", "source contains a control character"},
		{"STOCK.GET s\x04 w c o", "sku contains a control character"},
		{"CAPTURE s new retail 0", "quantity must be an integer from 1 to 2147483647"},
		{"CAPTURE s new retail 1 ID k\x05", "idempotency key contains a control character"},
		{"STOCK.SET s w c o 1 -1", "price must be an integer from 0 to 4611686018427387903"},
		{"CAPTURE s new retail 1", ""},
		{"RELEASE s w c o 1 ID k1", ""},
		// More valid identifiers than the table holds: still valid.
		{"STOCK.SET sku-1 w-1 cond-1 src-1 5 1", ""},
		{"STOCK.SET sku-2 w-2 cond-2 src-2 5 1", ""},
		{"AVAILABLE sku-2 cond-2 src\x06", "source contains a control character"},
	}
	for round := range 3 {
		for _, c := range cases {
			args := words(c.in)
			var op inventory.Op
			if got := DecodeOp(Lookup(args[0]), args, in, &op); got != c.detail {
				t.Fatalf("round %d: %q: detail %q, want %q", round, c.in, got, c.detail)
			}
			if c.detail == "" {
				if d := op.Check(); d != "" {
					t.Fatalf("round %d: %q decoded, but Check says %q", round, c.in, d)
				}
			}
		}
	}
}

// TestLookupFoldsCase: a command word matches in any ASCII case, and
// only a letter folds (a byte 0x20 away from a non-letter does not).
func TestLookupFoldsCase(t *testing.T) {
	for _, c := range []struct {
		word string
		want Name
	}{
		{"CAPTURE", NameCapture}, {"capture", NameCapture}, {"CaPtUrE", NameCapture},
		{"stock.set", NameStockSet}, {"Hold.Get", NameHoldGet}, {"catalog.SET", NameCatalogSet},
		{"HOLD\x0eGET", NameUnknown}, {"STOCK\x0eSET", NameUnknown}, {"CAPTUR\x05", NameUnknown},
		{"HOLDNGET", NameUnknown}, {"STOCKNSET", NameUnknown}, // 'N' - 0x20 is '.'
		{"HOLDnGET", NameUnknown}, {"HOLD\xaeGET", NameUnknown},
		{"CAPTUREX", NameUnknown}, {"CAPTUR", NameUnknown}, {"capturf", NameUnknown}, {"", NameUnknown},
	} {
		if got := Lookup([]byte(c.word)); got != c.want {
			t.Fatalf("Lookup(%q) = %v, want %v", c.word, got, c.want)
		}
	}
	if !EqualFold([]byte("id"), "ID") || EqualFold([]byte("i\x04"), "ID") || EqualFold([]byte("I"), "ID") {
		t.Fatal("EqualFold")
	}
}

// TestAppendDecimal: the replies' numbers are strconv's, the one-digit
// ones included.
func TestAppendDecimal(t *testing.T) {
	for _, n := range []int64{0, 1, 9, 10, 11, 99, 100, 12345, -1, -9, -10, math.MaxInt64, math.MinInt64, math.MinInt64 + 9} {
		if got, want := string(appendDecimal([]byte("x"), n)), "x"+strconv.FormatInt(n, 10); got != want {
			t.Fatalf("appendDecimal(%d) = %q, want %q", n, got, want)
		}
		if got, want := string(AppendInt(nil, n)), ":"+strconv.FormatInt(n, 10)+"\r\n"; got != want {
			t.Fatalf("AppendInt(%d) = %q, want %q", n, got, want)
		}
	}
	if got := string(AppendArray(AppendBulk(nil, "w1"), 3)); got != "$2\r\nw1\r\n*3\r\n" {
		t.Fatalf("got %q", got)
	}
}
