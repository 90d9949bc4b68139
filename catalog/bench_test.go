package catalog

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
)

// benchWords is a vocabulary for the benchmark's titles: mixed case and
// letters outside ASCII, drawn with a Zipf skew so that a few words (and
// their first letters) are very common, as in a shop's catalog.
var benchWords = strings.Fields(`Shirt Jacket Über Größe Warm Cotton Linen shoe Boot sneaker Ärmel
	Été Café Mantel Rock Hose Jeans Socke Schal Mütze Handschuh Kleid Bluse Pullover Weste Anzug Krawatte
	Gürtel Tasche Rucksack Koffer Uhr Ring Kette Armband Brille Hut Kappe Stiefel Sandale Pantoffel
	Žaket Čepice Šála Łyżka Ñandú Ørsted Ålesund Σακάκι Пальто Куртка red blue green black white grey
	navy olive XL xs M slim wide classic Premium eco`)

func benchCatalog(b *testing.B, n int) (*Catalog, []string, int) {
	rng := rand.New(rand.NewPCG(7, 7))
	zipf := rand.NewZipf(rand.New(rand.NewPCG(8, 8)), 1.1, 2, uint64(len(benchWords)-1))
	var text int
	cat := New()
	var prefixes []string
	for i := range n {
		var t strings.Builder
		for w := range 2 + rng.IntN(4) {
			if w > 0 {
				t.WriteByte(' ')
			}
			t.WriteString(benchWords[zipf.Uint64()])
		}
		r := Record{SKU: fmt.Sprintf("SKU-%08d", i), Title: t.String(), Brand: benchWords[zipf.Uint64()]}
		text += len(r.SKU) + len(r.Title) + len(r.Brand)
		if d := cat.Set(r); d != "" {
			b.Fatal(d)
		}
		if i%1000 == 0 {
			rs := []rune(r.Title)
			prefixes = append(prefixes, string(rs[:1+rng.IntN(min(4, len(rs)))]))
		}
	}
	return cat, prefixes, text
}

func heapBytes() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkSearch1M builds a catalog of 1,000,000 records and runs
// title-prefix queries of 1..4 runes (offset 0..100, limit 20). It reports
// queries/s and the heap bytes per record beyond the record's own strings
// (sku, title, brand): map entry, record, folded copies, B-tree key.
func BenchmarkSearch1M(b *testing.B) {
	before := heapBytes()
	cat, prefixes, text := benchCatalog(b, 1_000_000)
	after := heapBytes()
	perRecord := (float64(after) - float64(before) - float64(text)) / float64(cat.Len())
	rng := rand.New(rand.NewPCG(9, 9))
	out := make([]Result, 0, 20)
	avail := func(string) int64 { return 1 }
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		q := Query{Prefix: prefixes[i%len(prefixes)], Offset: rng.IntN(101), Limit: 20}
		out, _ = cat.Search(q, avail, out[:0])
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "queries/s")
	b.ReportMetric(perRecord, "bytes/record")
	runtime.KeepAlive(cat)
}
