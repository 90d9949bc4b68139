package catalog

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// naiveTextOK is the reference for DESIGN.md's text rule: 1..256 bytes of
// UTF-8 without control characters.
func naiveTextOK(s string) bool {
	if len(s) == 0 || len(s) > TextBytesMax || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}

// naiveQueryOK is the reference for a query's validity: the prefix and a
// non-empty brand prefix follow the text rule, OFFSET is 0..100000 and
// LIMIT 1..1000 (0 means the default, 20).
func naiveQueryOK(q Query) bool {
	return naiveTextOK(q.Prefix) && (q.Brand == "" || naiveTextOK(q.Brand)) &&
		q.Offset >= 0 && q.Offset <= OffsetMax && q.Limit >= 0 && q.Limit <= LimitMax
}

// fuzzSeeds are titles and brands with the runes the contract's folding
// singles out: ß/ẞ, dotted and dotless i, final sigma, the Kelvin sign and
// long s, full-width letters, combining marks, the micro sign, ǅ, Cherokee,
// emoji, digits and punctuation.
var fuzzSeeds = []string{
	"Straße\tACME", "STRASSE\tAcme", "STRAẞE rot\tacme ag", "İstanbul\tİz", "istanbul\tiz", "ıstanbul\tIZ",
	"ΣΊΣΥΦΟΣ\tΣ", "σίσυφος\tς", "\u212Aelvin 5\tK", "ſoft\tS", "Ａｐｐｌｅ\tＡ", "ａpple\ta",
	"e\u0301clair\te", "éclair\tÉ", "µ-Meter\tµ", "μ-meter\tΜ", "ǅemal\tǄ", "Ꭰꭰ\tꭰ",
	"😀 Party\t😀", "2 Äpfel, 3 Birnen\tÄ", "Äpfel\tä", "", "a\ta", "A\tA",
}

// FuzzSearchAudit17 holds Set, Delete and Search (every brand plan) to a
// reference written without the index or Fold's matching: a record
// matches when its title, rune by rune, is strings.EqualFold to the
// prefix (and so its brand to the brand prefix); matches are ordered by
// the folded title's bytes, then the SKU; OFFSET and LIMIT page through
// them. A snapshot, its decoding and a Freeze answer alike.
//
// recs is one operation a line: "title\tbrand" sets SKU s<line%32> (a
// record that fails the text rule is refused, changing nothing), an empty
// line deletes it.
func FuzzSearchAudit17(f *testing.F) {
	seeds := strings.Join(fuzzSeeds, "\n")
	// Set again: the second copy, shifted by one line, replaces records
	// with others (lines i and i+32 set the same SKU).
	twice := seeds + "\n\n" + strings.Join(fuzzSeeds[:10], "\n") + "\n" + seeds
	f.Add(twice, "STRA", "ac", uint16(0), uint16(0), uint8(0))
	f.Add(twice, "ä", "ä", uint16(1), uint16(0), uint8(0))
	f.Add(seeds, "straß", "A", uint16(1), uint16(2), uint8(1))
	f.Add(seeds, "σίσυφοσ", "Σ", uint16(0), uint16(1000), uint8(2))
	f.Add(seeds, "i", "", uint16(3), uint16(1001), uint8(3))
	f.Add(seeds, "k", "k", uint16(10), uint16(5), uint8(0x80))
	f.Add(seeds, "k", "k", uint16(11), uint16(5), uint8(0x80))
	f.Add(seeds, "I", "i", uint16(0), uint16(10), uint8(0))
	f.Add(seeds, "\u212A", "", uint16(0), uint16(10), uint8(0))
	f.Add(seeds, "E", "", uint16(0), uint16(0), uint8(0))
	f.Add(seeds, "Σ", "σ", uint16(1), uint16(0), uint8(0))
	f.Add(seeds, "ａ", "Ａ", uint16(0), uint16(5), uint8(0))
	f.Add(seeds, "", "", uint16(0), uint16(5), uint8(0))
	f.Add(seeds, "x\x00", "a", uint16(0), uint16(5), uint8(0))
	f.Add("a\x7fb\tc\nab\tc\n\xff\tc", "a", "\xff", uint16(0), uint16(5), uint8(0))
	f.Fuzz(func(t *testing.T, recs, prefix, brand string, offset, limit uint16, plan uint8) {
		cat := New()
		want := map[string]Record{}
		for i, line := range strings.Split(recs, "\n") {
			sku := fmt.Sprint("s", i%32)
			if line == "" {
				_, had := want[sku]
				if cat.Delete(sku) != had {
					t.Fatalf("Delete(%s) disagrees with the reference (had %v)", sku, had)
				}
				delete(want, sku)
				continue
			}
			title, br, _ := strings.Cut(line, "\t")
			r := Record{SKU: sku, Title: title, Brand: br}
			ok := naiveTextOK(title) && naiveTextOK(br)
			if d := cat.Set(r); (d == "") != ok {
				t.Fatalf("Set(%+q, %+q) = %q, reference valid = %v", title, br, d, ok)
			}
			if ok {
				want[sku] = r
			}
		}
		if cat.Len() != len(want) || cat.index.Len() != len(want) {
			t.Fatalf("%d records, %d title keys, want %d", cat.Len(), cat.index.Len(), len(want))
		}
		for sku, r := range want {
			if g, ok := cat.Get(sku); !ok || !g.Equal(&r) {
				t.Fatalf("Get(%s) = %+v %v, want %+v", sku, g, ok, r)
			}
		}

		q := Query{Prefix: prefix, Brand: brand, Offset: int(offset) % 20, Limit: int(limit) % 1003}
		if plan&0x80 != 0 {
			q.Offset = OffsetMax - 10 + int(offset)%20 // both sides of the bound
		}
		valid := naiveQueryOK(q)
		available := func(sku string) int64 { return int64(len(sku)) }
		var ref []Result
		if valid {
			rq := q
			if rq.Limit == 0 {
				rq.Limit = LimitDefault
			}
			ref = bruteSearch(want, rq, available)
		}
		check := func(what string, c *Catalog) {
			t.Helper()
			got, d := c.Search(q, available, nil)
			if (d == "") != valid {
				t.Fatalf("%s: Search(%+v) detail %q, reference valid = %v", what, q, d, valid)
			}
			if !slices.Equal(got, ref) {
				t.Fatalf("%s: Search(%+v)\n got %+v\nwant %+v", what, q, got, ref)
			}
		}
		for _, p := range []struct {
			name string
			scan bool
			plan brandPlan
		}{{"auto", false, planAuto}, {"rune", false, planRune}, {"merge", false, planMerge}, {"scan", true, planAuto}} {
			cat.scanBrands, cat.brandPlan = p.scan, p.plan
			check(p.name, cat)
		}
		cat.scanBrands, cat.brandPlan = false, planAuto

		// Snapshot round trip: the same bytes again, the same answers; a
		// Freeze taken now encodes the same bytes after later changes.
		snap := cat.AppendSnapshot(nil)
		frozen := cat.Freeze()
		cat.Set(Record{SKU: "s0", Title: "changed after the freeze", Brand: "z"})
		cat.Delete("s1")
		if got := frozen.AppendSnapshot(nil); string(got) != string(snap) {
			t.Fatal("a Freeze encodes other bytes than the catalog did when it was taken")
		}
		back, rest, err := DecodeSnapshot(snap)
		if err != nil || len(rest) != 0 {
			t.Fatalf("DecodeSnapshot: %v, %d bytes left", err, len(rest))
		}
		if again := back.AppendSnapshot(nil); string(again) != string(snap) {
			t.Fatal("a decoded snapshot encodes other bytes")
		}
		check("decoded", back)

		// The folding helpers agree with the reference on these strings.
		for _, s := range []string{prefix, brand, recs} {
			if !utf8.ValidString(s) {
				continue
			}
			var b strings.Builder
			for _, r := range s {
				b.WriteRune(FoldRune(r))
			}
			if Fold(s) != b.String() {
				t.Fatalf("Fold(%+q) = %+q, want %+q", s, Fold(s), b.String())
			}
			for _, p := range []string{prefix, brand} {
				if !utf8.ValidString(p) {
					continue
				}
				ref := matchesPrefix(s, p)
				if HasFoldedPrefix(s, Fold(p)) != ref || strings.HasPrefix(Fold(s), Fold(p)) != ref {
					t.Fatalf("prefix %+q of %+q: HasFoldedPrefix %v, folded HasPrefix %v, reference %v",
						p, s, HasFoldedPrefix(s, Fold(p)), strings.HasPrefix(Fold(s), Fold(p)), ref)
				}
				if end, ok := PrefixEnd(Fold(p)); ok && strings.HasPrefix(Fold(s), Fold(p)) && Fold(s) >= end {
					t.Fatalf("PrefixEnd(%+q) = %+q is not above %+q", Fold(p), end, Fold(s))
				}
			}
		}
	})
}
