package search

import (
	"testing"

	"allot/catalog"
	"allot/store"
)

// BenchmarkCatalogQueries runs the workload's own queries (1M records, the
// default brand share) against package catalog in process: the index's
// cost per query without any engine or network around it, split into the
// title-only queries and the ones that also carry a brand prefix.
func BenchmarkCatalogQueries(b *testing.B) {
	w, err := Generate(Params{Records: 1_000_000, Queries: 100_000, Seed: 1, BrandShare: BrandShareDefault})
	if err != nil {
		b.Fatal(err)
	}
	cat := catalog.New()
	for i := range w.Records {
		if d := cat.Set(w.Records[i]); d != "" {
			b.Fatal(d)
		}
	}
	units := store.SKUUnits(w.Rows)
	avail := func(sku string) int64 { return units[sku] }
	for _, c := range []struct {
		name  string
		brand bool
	}{{"title", false}, {"brand", true}} {
		var qs []catalog.Query
		for _, q := range w.Queries {
			if (q.Brand != "") == c.brand {
				qs = append(qs, q)
			}
		}
		b.Run(c.name, func(b *testing.B) {
			out := make([]catalog.Result, 0, 20)
			for i := 0; i < b.N; i++ {
				out, _ = cat.Search(qs[i%len(qs)], avail, out[:0])
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "queries/s")
		})
	}
}
