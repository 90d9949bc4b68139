package catalog

import "testing"

// An attribute named id, in any case, is reserved for requests (RESP reads
// a trailing ID pair as the idempotency key). Records already stored with
// one (HTTP took it, and RESP when it was not the last pair) still decode
// and replay: the reservation is not part of Check.
func TestCheckReservedNames(t *testing.T) {
	const want = "attribute name id is reserved: RESP reads a trailing ID pair as the idempotency key"
	for _, c := range []struct {
		attrs []Attribute
		want  string
	}{
		{nil, ""},
		{[]Attribute{{"colour", "red"}}, ""},
		{[]Attribute{{"idx", "1"}, {"uid", "2"}}, ""},
		{[]Attribute{{"id", "42"}}, want},
		{[]Attribute{{"ID", ""}}, want},
		{[]Attribute{{"colour", "red"}, {"iD", "x"}}, want},
	} {
		r := Record{SKU: "s1", Title: "Widget", Brand: "Acme", Attributes: c.attrs}
		if got := r.CheckReservedNames(); got != c.want {
			t.Errorf("%v: CheckReservedNames() = %q, want %q", c.attrs, got, c.want)
		}
		// Not part of Check: a stored record decodes as before.
		r.Normalize()
		if d := r.Check(); d != "" {
			t.Errorf("%v: Check() = %q, want \"\"", c.attrs, d)
		}
		got, rest, err := DecodeRecord(AppendRecord(nil, &r))
		if err != nil || len(rest) != 0 || !got.Equal(&r) {
			t.Errorf("%v: DecodeRecord = %+v, %q, %v", c.attrs, got, rest, err)
		}
	}
}
