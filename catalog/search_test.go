package catalog

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// alphabet mixes ASCII, both cases, letters whose fold orbit has three
// members (k K K, s S ſ, σ Σ ς), letters without a case partner (ß's
// partner ẞ, İ, ı), CJK, digits and punctuation, so that random titles hit
// every branch of FoldRune and of the byte order.
var alphabet = []rune("aAbBkK\u212AsSſσΣςßẞİıéÉöÖжЖ日本 -_.9%")

func randomText(rng *rand.Rand, maxRunes int) string {
	n := 1 + rng.IntN(maxRunes)
	var b strings.Builder
	for range n {
		b.WriteRune(alphabet[rng.IntN(len(alphabet))])
	}
	return b.String()
}

// matchesPrefix is the reference for "s starts with p under simple case
// folding", written without Fold: rune by rune, two runes match when
// strings.EqualFold says so (Go's SimpleFold orbits).
func matchesPrefix(s, p string) bool {
	for p != "" {
		if s == "" {
			return false
		}
		rs, ns := utf8.DecodeRuneInString(s)
		rp, np := utf8.DecodeRuneInString(p)
		if !strings.EqualFold(string(rs), string(rp)) {
			return false
		}
		s, p = s[ns:], p[np:]
	}
	return true
}

// bruteSearch filters every record and sorts the matches: the reference
// Search must agree with.
func bruteSearch(recs map[string]Record, q Query, available func(string) int64) []Result {
	type hit struct {
		folded string
		r      Record
	}
	var hits []hit
	for _, r := range recs {
		if matchesPrefix(r.Title, q.Prefix) && (q.Brand == "" || matchesPrefix(r.Brand, q.Brand)) {
			hits = append(hits, hit{Fold(r.Title), r})
		}
	}
	slices.SortFunc(hits, func(a, b hit) int {
		if c := strings.Compare(a.folded, b.folded); c != 0 {
			return c
		}
		return strings.Compare(a.r.SKU, b.r.SKU)
	})
	var out []Result
	for i := q.Offset; i < len(hits) && len(out) < q.Limit; i++ {
		out = append(out, Result{hits[i].r.SKU, hits[i].r.Title, hits[i].r.Brand, available(hits[i].r.SKU)})
	}
	return out
}

// randomPrefix draws a prefix from a title (its first runes, each flipped
// to another member of its fold orbit at random) or makes one up.
func randomPrefix(rng *rand.Rand, titles []string) string {
	if len(titles) == 0 || rng.IntN(4) == 0 {
		return randomText(rng, 3)
	}
	t := []rune(titles[rng.IntN(len(titles))])
	n := 1 + rng.IntN(min(4, len(t)))
	p := t[:n:n]
	for i, r := range p {
		if rng.IntN(2) == 0 {
			p[i] = []rune(strings.ToUpper(string(r)))[0]
		}
	}
	return string(p)
}

func TestSearchEqualsBruteForce(t *testing.T) {
	for seed := uint64(1); seed <= 300; seed++ {
		rng := rand.New(rand.NewPCG(seed, 13))
		cat := New()
		recs := map[string]Record{}
		var titles []string
		nOps := 1 + rng.IntN(300)
		for range nOps {
			sku := fmt.Sprintf("sku%d", rng.IntN(nOps))
			if rng.IntN(5) == 0 {
				if cat.Delete(sku) != (recs[sku].SKU != "") {
					t.Fatalf("seed %d: Delete(%s) disagrees", seed, sku)
				}
				delete(recs, sku)
				continue
			}
			r := Record{SKU: sku, Title: randomText(rng, 6), Brand: randomText(rng, 2)}
			if d := cat.Set(r); d != "" {
				t.Fatalf("seed %d: %s", seed, d)
			}
			recs[sku] = r
			titles = append(titles, r.Title)
		}
		if cat.Len() != len(recs) || cat.index.Len() != len(recs) {
			t.Fatalf("seed %d: %d records, %d keys, want %d", seed, cat.Len(), cat.index.Len(), len(recs))
		}
		inBrands, refs := 0, 0
		for r, tr := range cat.byBrandRune {
			if tr.Len() == 0 {
				t.Fatalf("seed %d: brand tree %q kept with no records", seed, r)
			}
			inBrands += tr.Len()
		}
		for _, b := range cat.brandOf {
			refs += b.refs
		}
		if inBrands != len(recs) || refs != len(recs) {
			t.Fatalf("seed %d: %d keys in the brand index, %d brand references, want %d", seed, inBrands, refs, len(recs))
		}
		available := func(sku string) int64 { return int64(len(sku)) * 3 }
		for range 50 {
			q := Query{Prefix: randomPrefix(rng, titles), Offset: rng.IntN(5), Limit: 1 + rng.IntN(8)}
			if rng.IntN(3) == 0 {
				q.Brand = randomText(rng, 1)
			}
			want := bruteSearch(recs, q, available)
			// Every plan of a brand query answers the same (brand.go).
			for _, scan := range []bool{false, true} {
				cat.scanBrands = scan
				got, d := cat.Search(q, available, nil)
				if d != "" {
					t.Fatalf("seed %d: %+v: %s", seed, q, d)
				}
				if !slices.Equal(got, want) {
					t.Fatalf("seed %d scan %v: Search(%+v)\n got %+v\nwant %+v", seed, scan, q, got, want)
				}
			}
			cat.scanBrands = false
		}
	}
}

// A deliberately broken search (one that does not fold the prefix) must
// fail the comparison: the property test has the power to see it.
func TestBruteForceCatchesUnfoldedPrefix(t *testing.T) {
	cat := New()
	recs := map[string]Record{}
	for i, title := range []string{"apple", "Apricot", "ÄRGER", "ärmel", "banana"} {
		r := Record{SKU: fmt.Sprint("s", i), Title: title, Brand: "b"}
		cat.Set(r)
		recs[r.SKU] = r
	}
	q := Query{Prefix: "ÄR", Limit: 10}
	broken := func() []Result {
		var out []Result
		m := newMatcher(q.Prefix)
		cat.index.AscendGreaterOrEqual(m.seek(), func(k indexKey) bool {
			if !m.match(k) {
				return false
			}
			out = append(out, Result{k.e.sku, k.e.title(), k.e.brand.name, 0})
			return true
		})
		return out
	}()
	want := bruteSearch(recs, q, func(string) int64 { return 0 })
	if len(want) != 2 || slices.Equal(broken, want) {
		t.Fatalf("the reference does not tell a search that skips folding apart: broken %+v, want %+v", broken, want)
	}
	got, _ := cat.Search(q, nil, nil)
	if !slices.Equal(got, want) {
		t.Fatalf("Search = %+v, want %+v", got, want)
	}
}

// Prefixes longer than the 8 bytes a key holds inline, and titles that tie
// on those 8 bytes, take the path that reads the entry: held to the same
// reference, with and without a brand.
func TestSearchLongPrefixes(t *testing.T) {
	cat := New()
	recs := map[string]Record{}
	titles := []string{"Ärmelschoner", "ärmelschonerin", "ÄRMELSCHONER rot", "Ärmel", "ärmelschön", "Ärmelschoner", "Armelschoner", "ärmelscho"}
	for i, title := range titles {
		r := Record{SKU: fmt.Sprint("s", i), Title: title, Brand: []string{"Acme Industrie", "acme industries", "Acorn", "Bolt"}[i%4]}
		if d := cat.Set(r); d != "" {
			t.Fatal(d)
		}
		recs[r.SKU] = r
	}
	for _, p := range []string{"ärmelschoner", "ÄRMELSCHONER ", "ärmelsch", "ärmelscho", "ärmelschö", "Ärmel", "ä", "armelschoner"} {
		for _, brand := range []string{"", "a", "ac", "acme", "ACME INDUSTRIES", "acme industrie", "b", "x"} {
			q := Query{Prefix: p, Brand: brand, Limit: 10}
			want := bruteSearch(recs, q, func(string) int64 { return 0 })
			for _, scan := range []bool{false, true} {
				cat.scanBrands = scan
				got, d := cat.Search(q, nil, nil)
				if d != "" || !slices.Equal(got, want) {
					t.Fatalf("scan %v: Search(%+v) = %+v %q, want %+v", scan, q, got, d, want)
				}
			}
		}
	}
}
