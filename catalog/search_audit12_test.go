package catalog

import (
	"strings"
	"testing"
)

// A search prefix is bounded like the text it is a prefix of: 1..256
// bytes as sent (DESIGN.md: "Title and brand: 1..256 bytes …; an empty
// prefix is invalid"). The bound is not on the folded prefix: folding
// changes a text's length both ways (U+212A KELVIN SIGN, 3 bytes, folds
// to "k", 1 byte; U+023A, 2 bytes, to U+2C65, 3 bytes), so a 256-byte
// title folds to up to 384 bytes and a folded bound of 256 would refuse
// prefixes that match it. The detail says the limit is on the bytes sent.
func TestQueryPrefixByteLimit(t *testing.T) {
	const detail = " is longer than 256 bytes (the limit is on its bytes as sent, before case folding)"
	kelvin := strings.Repeat("\u212A", 86) // 258 bytes, folds to 86
	for _, c := range []struct {
		q    Query
		want string
	}{
		{Query{Prefix: kelvin}, "prefix" + detail},
		{Query{Prefix: "k", Brand: kelvin}, "brand prefix" + detail},
		{Query{Prefix: strings.Repeat("a", 257)}, "prefix" + detail},
	} {
		if got := c.q.Check(); got != c.want {
			t.Errorf("Check(%d-byte prefix, %d-byte brand) = %q, want %q", len(c.q.Prefix), len(c.q.Brand), got, c.want)
		}
	}
	// 256 bytes as sent that fold to 384: accepted, and found.
	grow := strings.Repeat("\u023A", 128)
	if n := len(Fold(grow)); n != 384 {
		t.Fatalf("Fold grows %d bytes to %d, want 384", len(grow), n)
	}
	c := New()
	if d := c.Set(Record{SKU: "s1", Title: grow, Brand: grow}); d != "" {
		t.Fatal(d)
	}
	got, d := c.Search(Query{Prefix: grow, Brand: grow}, nil, nil)
	if d != "" || len(got) != 1 || got[0].SKU != "s1" {
		t.Fatalf("Search(256-byte prefix folding to 384) = %v, %q; want s1", got, d)
	}
}
