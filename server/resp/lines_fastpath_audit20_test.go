package resp

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"allot/inventory"
)

// unknownInterner interns nothing and knows no string valid, so DecodeOp
// runs the op's whole Check on every command.
type unknownInterner struct{}

func (unknownInterner) Intern(b []byte) string { return string(b) }
func (unknownInterner) InternID(b []byte) (string, bool) {
	return string(b), false
}

// decodeLines decodes args with in and says what came out: the detail, and
// the op when it decoded.
func decodeLines(args [][]byte, in Interner, op *inventory.Op) string {
	if detail := DecodeOp(Lookup(args[0]), args, in, op); detail != "" {
		return "detail " + detail
	}
	return fmt.Sprintf("op %#v", *op)
}

// checkLinesFastPath decodes args three times, with an interner that knows
// nothing (the whole Check), with a new caching interner and with one
// warmed on the same bytes (the lines' identifiers known valid, so the
// check that skips them), and fails unless all three agree.
func checkLinesFastPath(t *testing.T, args [][]byte) {
	t.Helper()
	want := decodeLines(args, unknownInterner{}, &inventory.Op{})
	in := NewStringInterner(internEntriesTest)
	if got := decodeLines(args, in, &inventory.Op{}); got != want {
		t.Fatalf("%q: caching interner, cold: %s\nwhole check: %s", args, got, want)
	}
	for _, a := range args {
		in.InternID(a)
	}
	// The second decode reuses the op and its lines' buffer, as a
	// connection does.
	var op inventory.Op
	for range 2 {
		if got := decodeLines(args, in, &op); got != want {
			t.Fatalf("%q: caching interner, warm: %s\nwhole check: %s", args, got, want)
		}
	}
}

// internEntriesTest is small, so that a fuzzed command can fill the table
// and reach the interner's path that answers without remembering.
const internEntriesTest = 8

// FuzzLinesFastPathDiff: a HOLD or an ORDER of any arguments decodes to
// the same detail, and when valid to the same op, whether the lines'
// identifiers are checked again (an interner that knows none valid) or
// not (the caching interner, cold and warmed on the same bytes). data is
// the arguments after the command's name, split at sep; with fit, they
// are cut to the nearest count the command takes, so that most inputs
// reach the checks rather than the arity error.
func FuzzLinesFastPathDiff(f *testing.F) {
	for _, s := range []struct {
		order bool
		data  string
	}{
		{false, "h1 600000 sku new retail 1 t new retail 2 u new retail 1"},
		{false, "h1 600000 sku new retail 0 s\x01 new retail 1"},
		{false, "h1 600000 s\x01 new retail 1 sku new retail 0"},
		{false, "h1 1 s c o 1 s c o 0"},
		{false, "h1 0 sku new retail 1"},
		{false, " 1 sku new retail 1"},
		{false, "h1 1 sku n\xffew retail 1"},
		{false, "h1 1 sku new retail x"},
		{false, "h1 604800001 sku new retail 2147483648"},
		{true, "sku new retail 1 sku new retail 1"},
		{true, "sku new retail 1 ID k1"},
		{true, "sku new retail 1 id k\x01"},
		{true, "sku new retail 1 XX k1"},
		{true, "sku  retail 1"},
		{true, "sku new c1\u0085 1"},
		{true, "sku new retail -1 t new retail 1"},
		{true, strings.Repeat("x", 65) + " new retail 1"},
		{true, strings.TrimSpace(strings.Repeat("s c o 1 ", 64))},
		{true, strings.TrimSpace(strings.Repeat("s c o 1 ", 65))},
		{false, "h1 1 " + strings.TrimSpace(strings.Repeat("s c o 1 ", 65))},
		{false, "h1 1 " + strings.TrimSpace(strings.Repeat("s c o 1 ", 63)) + " s c o 0"},
	} {
		f.Add(s.order, []byte(s.data), byte(' '), true)
		f.Add(s.order, []byte(s.data), byte(' '), false)
	}
	f.Fuzz(func(t *testing.T, order bool, data []byte, sep byte, fit bool) {
		name := "HOLD"
		if order {
			name = "ORDER"
		}
		args := append([][]byte{[]byte(name)}, bytes.Split(data, []byte{sep})...)
		if fit {
			args = fitLines(args, order)
		}
		checkLinesFastPath(t, args)
	})
}

// fitLines cuts args to the nearest count its command takes: a HOLD's
// 3+4k, an ORDER's 1+4k, or 3+4k ending in ID <key>.
func fitLines(args [][]byte, order bool) [][]byte {
	if !order {
		if len(args) < 3 {
			return args
		}
		return args[:len(args)-(len(args)-3)%4]
	}
	if (len(args)-1)%4 == 2 && len(args) >= 7 {
		return args
	}
	return args[:len(args)-(len(args)-1)%4]
}

// TestLinesFastPathRepeated: a HOLD or an ORDER whose lines' identifiers
// are invalid is refused with Check's detail on every try, not only the
// first (the interner knows valid identifiers only), a bad quantity on a
// line before the bad identifier is still the answer, and the same lines
// made valid decode; and each answer is the whole Check's.
func TestLinesFastPathRepeated(t *testing.T) {
	in := NewStringInterner(6)
	cases := []struct{ in, detail string }{
		{"HOLD h1 1000 sku new retail 1 s\x01 new retail 1", "line 2: sku contains a control character"},
		{"HOLD h1 1000 sku new retail 0 s\x01 new retail 1", "line 1: quantity must be an integer from 1 to 2147483647"},
		{"HOLD h1 1000 sku new\x7f retail 0", "line 1: condition contains a control character"},
		{"ORDER sku new retail 1 sku new re\xfftail 1", "line 2: source is not valid UTF-8"},
		{"ORDER sku new retail 2147483648 sku new re\xfftail 1", "line 1: quantity must be an integer from 1 to 2147483647"},
		{"ORDER sku new retail 1 ID k\x05", "idempotency key contains a control character"},
		{"HOLD h\x01 1000 sku new retail 1", "hold contains a control character"},
		{"HOLD h1 0 sku new retail 1", "ttl must be an integer from 1 to 604800000 milliseconds"},
		{"HOLD h1 1000 sku new retail 1 sku new retail 1", ""},
		{"ORDER sku new retail 1 ID k1", ""},
		// More valid identifiers than the table holds: still valid.
		{"ORDER sku-1 cond-1 src-1 1 sku-2 cond-2 src-2 1 sku-3 cond-3 src-3 1", ""},
		{"ORDER sku-1 cond-1 src-1 1 sku-2 cond-2 src-2 1 sku-3 cond-3 src\x06 1", "line 3: source contains a control character"},
		{"HOLD h2 1000 sku-3 cond-3 src-3 1 sku-4 cond-4 src-4 -1", "line 2: quantity must be an integer from 1 to 2147483647"},
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
			checkLinesFastPath(t, args)
		}
	}
	if len(in.table) != 6 {
		t.Fatalf("the interner's table holds %d strings, want its bound 6", len(in.table))
	}
}

// vouchingInterner vouches for every string: it says each is a valid
// identifier without checking it.
type vouchingInterner struct{}

func (vouchingInterner) Intern(b []byte) string { return string(b) }
func (vouchingInterner) InternID(b []byte) (string, bool) {
	return string(b), true
}

// TestLinesFastPathIsTaken: a HOLD or an ORDER whose lines' identifiers
// the interner vouches for is checked without them, so a line with a
// control character in its SKU decodes when the interner lies (the fast
// path trusted it), while the rules the fast path keeps still hold (a
// bad quantity, a bad hold id). A decoder that never took the fast path
// would refuse the SKU here, and the differential tests could not tell.
func TestLinesFastPathIsTaken(t *testing.T) {
	for _, c := range []struct{ in, detail string }{
		{"HOLD h1 1000 s\x01 new retail 1", ""},
		{"ORDER s\x01 new retail 1 sku c\x02 o 2", ""},
		{"HOLD h1 1000 s\x01 new retail 0", "line 1: quantity must be an integer from 1 to 2147483647"},
		{"HOLD h\x01 1000 sku new retail 1", "hold contains a control character"},
		{"ORDER sku new retail 1 ID k\x05", "idempotency key contains a control character"},
	} {
		args := words(c.in)
		var op inventory.Op
		if got := DecodeOp(Lookup(args[0]), args, vouchingInterner{}, &op); got != c.detail {
			t.Errorf("%q with every identifier vouched for: detail %q, want %q", c.in, got, c.detail)
		}
		// Without the interner's word, the whole check refuses the bad
		// identifiers.
		if c.detail == "" {
			if got := DecodeOp(Lookup(args[0]), args, unknownInterner{}, &op); got == "" {
				t.Errorf("%q with no identifier known: decoded, want a refusal", c.in)
			}
		}
	}
}

// TestHoldIDsStayOutOfTheInterner: hold ids are one per cart; interning
// them would fill a connection's table and stop it interning the SKUs.
// After a thousand HOLDs of distinct carts over the same lines the table
// holds the lines' three identifiers only.
func TestHoldIDsStayOutOfTheInterner(t *testing.T) {
	in := NewStringInterner(64)
	var op inventory.Op
	for i := range 1000 {
		args := words(fmt.Sprintf("HOLD cart-%d 600000 sku new retail 1", i))
		if got := DecodeOp(Lookup(args[0]), args, in, &op); got != "" {
			t.Fatalf("%q: %s", args, got)
		}
		if op.Hold != fmt.Sprintf("cart-%d", i) {
			t.Fatalf("hold %q, want cart-%d", op.Hold, i)
		}
	}
	if len(in.table) != 3 {
		t.Fatalf("the interner's table holds %d strings after 1000 carts' HOLDs, want 3 (sku, new, retail)", len(in.table))
	}
}
