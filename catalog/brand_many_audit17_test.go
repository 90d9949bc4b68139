package catalog

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// A brand prefix that selects more than mergeGroupsFew groups takes the
// automatic plan's cost choice (mergeCheaper), and one that selects more
// than mergeGroupsMax the rune walk: TestBrandPlansEqualBruteForce's
// thirteen brands reach neither. Here 150 brands share their first letter
// and 2..3-rune prefixes select 1, 10 or 100 of them; every plan answers
// as the brute force does, before and after records move between brands.
func TestBrandManyGroupsEqualBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 17))
	var brands []string
	for i := range 150 {
		// "Bx..." for i < 100 (100 groups under "bx"), "By<i>" 10 under
		// "by", the rest under "bz" in both cases.
		switch {
		case i < 100:
			brands = append(brands, fmt.Sprintf("Bx%02d", i))
		case i < 110:
			brands = append(brands, fmt.Sprintf("BY%d", i))
		default:
			brands = append(brands, fmt.Sprintf("bz%d", i))
		}
	}
	cat := New()
	recs := map[string]Record{}
	set := func(i int) {
		r := Record{SKU: fmt.Sprint("s", i), Title: fmt.Sprintf("%c%d", "aAbé"[rng.IntN(4)], rng.IntN(300)), Brand: brands[rng.IntN(len(brands))]}
		if d := cat.Set(r); d != "" {
			t.Fatal(d)
		}
		recs[r.SKU] = r
	}
	for i := range 6000 {
		set(i)
	}
	check := func(round int) {
		for _, brand := range []string{"b", "B", "bx", "BX", "bx0", "Bx42", "by", "BY10", "bz", "bz14", "bq"} {
			for _, p := range []struct {
				prefix        string
				offset, limit int
			}{{"a", 0, 20}, {"A", 37, 100}, {"a1", 3, 5}, {"b", 0, 1000}, {"a2", 100, 7}, {"é", 0, 3}} {
				q := Query{Prefix: p.prefix, Brand: brand, Offset: p.offset, Limit: p.limit}
				want := bruteSearch(recs, q, func(string) int64 { return 0 })
				for _, plan := range []brandPlan{planAuto, planRune, planMerge} {
					cat.brandPlan = plan
					got, d := cat.Search(q, nil, nil)
					if d != "" || !slices.Equal(got, want) {
						t.Fatalf("round %d plan %d: Search(%+v): %d results %q, want %d", round, plan, q, len(got), d, len(want))
					}
				}
				cat.brandPlan = planAuto
			}
		}
	}
	check(0)
	for i := range 3000 {
		if i%3 == 0 {
			cat.Delete(fmt.Sprint("s", i))
			delete(recs, fmt.Sprint("s", i))
			continue
		}
		set(i)
	}
	check(1)
}
