package catalog

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// A brand prefix of more than one letter used to walk every record of the
// title range whose brand starts with the same letter: a rare brand next
// to a common one with its first letter cost a walk over the common one's
// records (22 ms at 1M records, on the engine's writer). The keys a query
// reads must be bounded by its matches (and offset), not by the title
// range: none when no brand has the prefix.
func TestBrandQueryCostBoundedByMatches(t *testing.T) {
	c := New()
	recs := map[string]Record{}
	add := func(sku, title, brand string) {
		r := Record{SKU: sku, Title: title, Brand: brand}
		if d := c.Set(r); d != "" {
			t.Fatal(d)
		}
		recs[sku] = r
	}
	for i := range 30000 {
		add(fmt.Sprintf("sony-%05d", i), fmt.Sprintf("Alpha %05d", i), "Sony")
	}
	for i := range 6 {
		add(fmt.Sprintf("samsung-%d", i), fmt.Sprintf("alpha %05d", i*5000), "Samsung")
	}
	for i := range 4 {
		add(fmt.Sprintf("samson-%d", i), fmt.Sprintf("ALPHA %05d", i*7000+1), "SAMSON")
	}
	add("sanyo", "Alpha 99999", "Sanyo")
	add("beta", "Beta", "Samsung")
	for _, c2 := range []struct {
		q       Query
		n       int // results
		walkMax int
	}{
		{Query{Prefix: "alpha", Brand: "sams", Limit: 20}, 10, 40},
		{Query{Prefix: "alpha", Brand: "SAMSUNG", Offset: 2, Limit: 3}, 3, 20},
		{Query{Prefix: "al", Brand: "san", Limit: 20}, 1, 8},
		{Query{Prefix: "alpha", Brand: "sx", Limit: 20}, 0, 0},
		{Query{Prefix: "alpha", Brand: "samsungs", Limit: 20}, 0, 0},
		{Query{Prefix: "alpha 1", Brand: "so", Offset: 100, Limit: 20}, 20, 3*120 + 32},
		{Query{Prefix: "alpha", Brand: "s", Offset: 10, Limit: 20}, 20, 10 + 20 + 1},
	} {
		q := c2.q
		c.walked = 0
		got, d := c.Search(q, nil, nil)
		if d != "" {
			t.Fatal(d)
		}
		want := bruteSearch(recs, q, func(string) int64 { return 0 })
		if !slices.Equal(got, want) || len(got) != c2.n {
			t.Fatalf("Search(%+v) = %d results %+v, want %d: %+v", q, len(got), got, c2.n, want)
		}
		if c.walked > c2.walkMax {
			t.Errorf("Search(%+v) read %d keys for %d results, want at most %d", q, c.walked, len(got), c2.walkMax)
		}
	}
}

// Every plan of a brand query (the rune walk, the merge of the groups,
// the automatic choice, the old scan) answers as the brute force does, for
// brand prefixes of one to three runes, brands that fold alike ("ACME",
// "Acme"), and records set again and deleted (so that groups empty and
// come back); the group index holds each record once, in the group of its
// folded brand, and only groups that hold records.
func TestBrandPlansEqualBruteForce(t *testing.T) {
	brands := []string{"Acme", "ACME", "acme industries", "Acorn", "ab", "Ärmel", "ärmel & Co", "σακ", "ΣΑΚΚΟΣ", "\u212Aelvin", "kelvin", "k", "Zeta"}
	for seed := uint64(1); seed <= 200; seed++ {
		rng := rand.New(rand.NewPCG(seed, 21))
		cat := New()
		recs := map[string]Record{}
		var titles []string
		nOps := 1 + rng.IntN(400)
		title := func() string { return randomText(rng, 5) }
		if seed%4 == 0 {
			// Few titles, many records a title prefix: each group holds
			// more keys of it than a cursor's first batches.
			nOps = 1000 + rng.IntN(1000)
			title = func() string { return string("aAbB"[rng.IntN(4)]) + fmt.Sprint(rng.IntN(50)) }
		}
		for range nOps {
			sku := fmt.Sprintf("sku%d", rng.IntN(nOps))
			if rng.IntN(4) == 0 {
				cat.Delete(sku)
				delete(recs, sku)
				continue
			}
			r := Record{SKU: sku, Title: title(), Brand: brands[rng.IntN(len(brands))]}
			if d := cat.Set(r); d != "" {
				t.Fatalf("seed %d: %s", seed, d)
			}
			recs[sku] = r
			titles = append(titles, r.Title)
		}
		inGroups := 0
		var last string
		cat.groups.Ascend(func(g *brandGroup) bool {
			if g.titles.Len() == 0 || (last != "" && g.folded <= last) {
				t.Fatalf("seed %d: group %q with %d records after %q", seed, g.folded, g.titles.Len(), last)
			}
			last = g.folded
			g.titles.Ascend(func(k indexKey) bool {
				if k.e.brand.folded != g.folded || k.e.brand.group != g {
					t.Fatalf("seed %d: %s (brand %q) in group %q", seed, k.e.sku, k.e.brand.folded, g.folded)
				}
				inGroups++
				return true
			})
			return true
		})
		if inGroups != len(recs) {
			t.Fatalf("seed %d: %d keys in the groups, want %d", seed, inGroups, len(recs))
		}
		for range 40 {
			b := []rune(Fold(brands[rng.IntN(len(brands))]))
			brand := string(b[:1+rng.IntN(min(3, len(b)))])
			if rng.IntN(2) == 0 {
				brand = strings.ToUpper(brand)
			}
			if rng.IntN(8) == 0 {
				brand = randomText(rng, 2)
			}
			q := Query{Prefix: randomPrefix(rng, titles), Brand: brand, Offset: rng.IntN(6), Limit: 1 + rng.IntN(10)}
			if rng.IntN(4) == 0 {
				// Wide: cursors fetch past their first batch.
				q.Prefix, q.Offset, q.Limit = randomText(rng, 1), rng.IntN(60), 1+rng.IntN(40)
			}
			want := bruteSearch(recs, q, func(string) int64 { return 0 })
			for _, plan := range []brandPlan{planAuto, planRune, planMerge} {
				for _, scan := range []bool{false, true} {
					cat.brandPlan, cat.scanBrands = plan, scan
					got, d := cat.Search(q, nil, nil)
					if d != "" || !slices.Equal(got, want) {
						t.Fatalf("seed %d plan %d scan %v: Search(%+v)\n got %+v %q\nwant %+v", seed, plan, scan, q, got, d, want)
					}
				}
			}
			cat.brandPlan, cat.scanBrands = planAuto, false
		}
	}
}
