package catalog

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// brandBench is the catalog of BenchmarkBrandSearch1M, built once for its
// sub-benchmarks.
var brandBench struct {
	cat       *Catalog
	titles    []string // title prefixes of 1..4 runes
	brands    []string // brand of each drawn record, for its prefix
	rare      []string // the 100 rarest brands
	perRecord float64
}

// benchBrands makes n distinct brands of 2..3 syllables, a quarter upper
// case, half capitalized, as bench/search's catalog has them.
func benchBrands(rng *rand.Rand, n int) []string {
	syllables := strings.Fields("ka ro mi ta lu ve no sa zen tek pro max ul tra fle xo bri qu dor ax el io mar tin bel")
	seen := map[string]bool{}
	var out []string
	for len(out) < n {
		var b strings.Builder
		for range 2 + rng.IntN(2) {
			b.WriteString(syllables[rng.IntN(len(syllables))])
		}
		s := b.String()
		switch rng.IntN(4) {
		case 0:
			s = strings.ToUpper(s)
		case 1, 2:
			s = strings.ToUpper(s[:1]) + s[1:]
		}
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

func buildBrandBench(b *testing.B) {
	if brandBench.cat != nil {
		return
	}
	const n = 1_000_000
	rng := rand.New(rand.NewPCG(11, 11))
	words := rand.NewZipf(rand.New(rand.NewPCG(12, 12)), 1.1, 2, uint64(len(benchWords)-1))
	brands := benchBrands(rng, 500)
	brandZipf := rand.NewZipf(rand.New(rand.NewPCG(13, 13)), 1.2, 2, uint64(len(brands)-1))
	counts := make([]int, len(brands))
	before := heapBytes()
	cat := New()
	var text int
	for i := range n {
		var t strings.Builder
		for w := range 2 + rng.IntN(4) {
			if w > 0 {
				t.WriteByte(' ')
			}
			t.WriteString(benchWords[words.Uint64()])
		}
		bi := brandZipf.Uint64()
		counts[bi]++
		r := Record{SKU: fmt.Sprintf("SKU-%08d", i), Title: t.String(), Brand: brands[bi]}
		text += len(r.SKU) + len(r.Title) + len(r.Brand)
		if d := cat.Set(r); d != "" {
			b.Fatal(d)
		}
		if i%1000 == 0 {
			rs := []rune(r.Title)
			brandBench.titles = append(brandBench.titles, string(rs[:1+rng.IntN(min(4, len(rs)))]))
			brandBench.brands = append(brandBench.brands, r.Brand)
		}
	}
	after := heapBytes()
	brandBench.perRecord = (float64(after) - float64(before) - float64(text)) / float64(cat.Len())
	byCount := slices.Clone(brands)
	slices.SortStableFunc(byCount, func(x, y string) int {
		return counts[slices.Index(brands, x)] - counts[slices.Index(brands, y)]
	})
	brandBench.rare = byCount[:100]
	brandBench.cat = cat
}

// runePrefix returns s's first n runes (fewer when s is shorter).
func runePrefix(s string, n int) string {
	i := 0
	for ; n > 0 && i < len(s); n-- {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return s[:i]
}

// BenchmarkBrandSearch1M builds a catalog of 1,000,000 records of 500
// brands (Zipf 1.2, as bench/search) and runs queries with a title prefix
// of 1..4 runes (offset 0..100, limit 20) and a brand prefix:
//
//	one-rune  the first letter of a drawn record's brand (the typed case);
//	multi     the first 2..4 letters of a drawn record's brand;
//	rare      the first 2..4 letters of one of the 100 rarest brands, whose
//	          first letter is shared by common ones (the audit's case);
//	none      a prefix no brand has ("zz").
//
// It reports queries/s, the index keys a query read on average and at
// most (keys/query, keys-max: the work a brand query does on the engine's
// writer, without a clock's noise) and the catalog's heap bytes per record beyond the
// records' strings (compare BenchmarkSearch1M's, which builds another
// catalog).
func BenchmarkBrandSearch1M(b *testing.B) {
	buildBrandBench(b)
	bb := &brandBench
	for _, c := range []struct {
		name  string
		brand func(rng *rand.Rand, i int) string
	}{
		{"one-rune", func(_ *rand.Rand, i int) string { return runePrefix(bb.brands[i%len(bb.brands)], 1) }},
		{"multi", func(rng *rand.Rand, i int) string { return runePrefix(bb.brands[i%len(bb.brands)], 2+rng.IntN(3)) }},
		{"rare", func(rng *rand.Rand, i int) string { return runePrefix(bb.rare[i%len(bb.rare)], 2+rng.IntN(3)) }},
		{"none", func(*rand.Rand, int) string { return "zz" }},
	} {
		b.Run(c.name, func(b *testing.B) {
			rng := rand.New(rand.NewPCG(9, 9))
			out := make([]Result, 0, 20)
			avail := func(string) int64 { return 1 }
			var walked, walkedMax int
			for i := 0; b.Loop(); i++ {
				q := Query{Prefix: bb.titles[i%len(bb.titles)], Brand: c.brand(rng, i), Offset: rng.IntN(101), Limit: 20}
				bb.cat.walked = 0
				out, _ = bb.cat.Search(q, avail, out[:0])
				walked += bb.cat.walked
				walkedMax = max(walkedMax, bb.cat.walked)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "queries/s")
			b.ReportMetric(float64(walked)/float64(b.N), "keys/query")
			b.ReportMetric(float64(walkedMax), "keys-max")
			b.ReportMetric(bb.perRecord, "bytes/record")
		})
	}
	runtime.KeepAlive(bb.cat)
}
