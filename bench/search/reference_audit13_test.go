package search

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"allot/catalog"
	"allot/inventory"
	"allot/store"
)

// The reference's folding gives every rune the fold package catalog
// gives it, though the two are derived differently (case mappings here,
// fold orbits there).
func TestAudit13ReferenceFoldsEveryRuneAsCatalog(t *testing.T) {
	var diffs []string
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if !utf8.ValidRune(r) {
			continue
		}
		if got, want := foldReferenceRune(r), catalog.FoldRune(r); got != want {
			diffs = append(diffs, fmt.Sprintf("U+%04X %q: reference U+%04X, catalog U+%04X", r, r, got, want))
		}
	}
	if len(diffs) > 0 {
		t.Fatalf("%d runes fold differently (unicode %s), first: %s", len(diffs), unicode.Version, strings.Join(diffs[:min(len(diffs), 20)], "; "))
	}
}

// corpus is a random catalog and queries over it, dense in what a
// folding or an ordering can get wrong: letters whose fold is not the
// obvious one, titles equal once folded (told apart by the SKU alone),
// shared prefixes, code points from every plane, and hundreds of brands
// sharing their first letters, so that catalog's every brand plan (one
// rune's tree, one group, a merge of a few, the rune tree for many) is
// taken.
type corpus struct {
	recs    []catalog.Record
	rows    []inventory.Row
	queries []catalog.Query
}

// special are runes whose simple case folding is easy to get wrong.
var special = []rune("ſKÅßẞİıµμΜιΙ\u0345\u1FBEςσΣϐϑϕϖϰϱϵϴǄǅǆǇǈǉǊǋǌǱǲǳᾀᾈᾳᾼῳῼẛΩωΐΐﬅﬆᲀвВᎠꭰᏸᏰაᲐ" +
	"iIkKsSaAeEéÉ\u0301日あ\uFFFF\U0010FFFF\U00010400\U00010428\U0001E900\U0001E922ⰀⰰԱաÐðÞþ")

// cased is every rune with a case partner.
var cased = func() []rune {
	var out []rune
	for r := rune(0x80); r <= unicode.MaxRune; r++ {
		if unicode.SimpleFold(r) != r {
			out = append(out, r)
		}
	}
	return out
}()

// variant returns a random member of r's case orbit.
func variant(rng *rand.Rand, r rune) rune {
	orbit := []rune{r}
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		orbit = append(orbit, f)
	}
	return orbit[rng.IntN(len(orbit))]
}

func randomRune(rng *rand.Rand) rune {
	switch n := rng.IntN(10); {
	case n < 4:
		return special[rng.IntN(len(special))]
	case n < 7:
		return cased[rng.IntN(len(cased))]
	case n < 9:
		return rune(' ' + rng.IntN(95))
	}
	for {
		r := rune(0x20 + rng.IntN(unicode.MaxRune-0x20))
		if utf8.ValidRune(r) && !unicode.IsControl(r) {
			return r
		}
	}
}

func randomText(rng *rand.Rand, runes int) []rune {
	out := make([]rune, runes)
	for i := range out {
		out[i] = randomRune(rng)
	}
	return out
}

// recase writes s with each rune replaced by a random member of its case
// orbit, truncated to maxBytes.
func recase(rng *rand.Rand, s []rune, maxBytes int) string {
	var b strings.Builder
	for _, r := range s {
		v := variant(rng, r)
		if b.Len()+utf8.RuneLen(v) > maxBytes {
			break
		}
		b.WriteRune(v)
	}
	return b.String()
}

func firstRunes(s string, n int) []rune {
	r := []rune(s)
	return r[:min(n, len(r))]
}

func newCorpus(seed uint64, records, queries int) *corpus {
	rng := rand.New(rand.NewPCG(seed, 13))
	stems := make([][]rune, 300)
	for i := range stems {
		stems[i] = randomText(rng, 1+rng.IntN(4))
	}
	heads := [][]rune{[]rune("ac"), []rune("be"), []rune("σα"), []rune("ꭰꭱ"), []rune("ſk"), []rune("İı")}
	brands := make([][]rune, 400)
	for i := range brands {
		brands[i] = append(slices.Clone(heads[rng.IntN(len(heads))]), randomText(rng, 1+rng.IntN(3))...)
	}
	c := &corpus{}
	for i := range records {
		var title []rune
		for range 1 + rng.IntN(3) {
			title = append(title, stems[rng.IntN(len(stems))]...)
		}
		// SKUs of any case and script (equal folded titles are ordered
		// by their bytes), a few given twice (the last record stands).
		sku := fmt.Sprintf("%s%d", string(randomText(rng, 1+rng.IntN(2))), i)
		if len(c.recs) > 0 && rng.IntN(20) == 0 {
			sku = c.recs[rng.IntN(len(c.recs))].SKU
		}
		r := catalog.Record{SKU: sku, Title: recase(rng, title, 256), Brand: recase(rng, brands[rng.IntN(len(brands))], 256)}
		if r.Title == "" || r.Brand == "" || r.Check() != "" {
			continue
		}
		c.recs = append(c.recs, r)
		for w := range rng.IntN(3) {
			c.rows = append(c.rows, inventory.Row{Key: inventory.RowKey{SKU: sku, Warehouse: fmt.Sprintf("w%d", w), Condition: "new", Source: "own"}, Count: int64(rng.IntN(21))})
		}
	}
	for len(c.queries) < queries {
		from := &c.recs[rng.IntN(len(c.recs))]
		q := catalog.Query{Limit: []int{0, 1, 3, 20, 1000}[rng.IntN(5)]}
		if rng.IntN(10) == 0 {
			q.Prefix = string(randomText(rng, 1+rng.IntN(2)))
		} else {
			q.Prefix = recase(rng, firstRunes(from.Title, 1+rng.IntN(5)), 256)
		}
		switch rng.IntN(10) {
		case 0, 1, 2:
			q.Brand = recase(rng, firstRunes(from.Brand, 1+rng.IntN(3)), 256)
		case 3:
			q.Brand = recase(rng, firstRunes(string(brands[rng.IntN(len(brands))]), 1+rng.IntN(4)), 256)
		}
		switch rng.IntN(10) {
		case 0, 1:
			q.Offset = rng.IntN(40)
		case 2:
			q.Offset = rng.IntN(catalog.OffsetMax + 1)
		}
		if q.Check() == "" {
			c.queries = append(c.queries, q)
		}
	}
	return c
}

// scanAll answers q by the contract with a walk over every record, from
// the first: the reference without its binary search. recs are the
// catalog's records (a SKU given twice keeps its last), folded.
func scanAll(recs []foldedRecord, units map[string]int64, q catalog.Query) []catalog.Result {
	prefix, brand := foldReference(q.Prefix), foldReference(q.Brand)
	var hits []foldedRecord
	for _, r := range recs {
		if strings.HasPrefix(r.title, prefix) && (q.Brand == "" || strings.HasPrefix(r.brand, brand)) {
			hits = append(hits, r)
		}
	}
	slices.SortFunc(hits, func(a, b foldedRecord) int {
		if c := strings.Compare(a.title, b.title); c != 0 {
			return c
		}
		return strings.Compare(a.SKU, b.SKU)
	})
	limit := q.Limit
	if limit == 0 {
		limit = 20
	}
	out := []catalog.Result{}
	for i := q.Offset; i < len(hits) && len(out) < limit; i++ {
		out = append(out, catalog.Result{SKU: hits[i].SKU, Title: hits[i].Title, Brand: hits[i].Brand, Available: units[hits[i].SKU]})
	}
	return out
}

// foldedRecord is a record with its title and brand folded.
type foldedRecord struct {
	catalog.Record
	title, brand string
}

// foldedRecords returns recs folded, the last of each SKU.
func foldedRecords(recs []catalog.Record) []foldedRecord {
	at := map[string]int{}
	var out []foldedRecord
	for _, r := range recs {
		f := foldedRecord{r, foldReference(r.Title), foldReference(r.Brand)}
		if i, ok := at[r.SKU]; ok {
			out[i] = f
			continue
		}
		at[r.SKU] = len(out)
		out = append(out, f)
	}
	return out
}

func describe(q catalog.Query) string {
	return fmt.Sprintf("prefix %+q (folded %+q) brand %+q (folded %+q) offset %d limit %d", q.Prefix, foldReference(q.Prefix), q.Brand, foldReference(q.Brand), q.Offset, q.Limit)
}

// The reference and package catalog answer a broad random corpus alike,
// and the reference answers as a walk over every record does.
func TestAudit13ReferenceAgreesWithCatalog(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		c := newCorpus(seed, 4000, 3000)
		ref, d := NewReference(c.recs, c.rows)
		if d != "" {
			t.Fatal(d)
		}
		cat := catalog.New()
		for _, r := range c.recs {
			if d := cat.Set(r); d != "" {
				t.Fatal(d)
			}
		}
		units := store.SKUUnits(c.rows)
		folded := foldedRecords(c.recs)
		nonEmpty, brand := 0, 0
		for i, q := range c.queries {
			want, d := cat.Search(q, func(sku string) int64 { return units[sku] }, nil)
			if d != "" {
				t.Fatalf("seed %d query %d: %s", seed, i, d)
			}
			got, d := ref.Search(q)
			if d != "" {
				t.Fatalf("seed %d query %d (%s): the reference refused it: %s", seed, i, describe(q), d)
			}
			if diff := Diff(got, want); diff != "" {
				t.Fatalf("seed %d query %d (%s): reference and catalog differ: %s", seed, i, describe(q), diff)
			}
			if i < 1000 {
				if diff := Diff(got, scanAll(folded, units, q)); diff != "" {
					t.Fatalf("seed %d query %d (%s): reference and a walk over every record differ: %s", seed, i, describe(q), diff)
				}
			}
			if len(want) > 0 {
				nonEmpty++
				if q.Brand != "" {
					brand++
				}
			}
		}
		// A corpus whose queries find nothing would agree by default.
		if nonEmpty < len(c.queries)/2 || brand < len(c.queries)/10 {
			t.Fatalf("seed %d: %d of %d queries found something, %d of them with a brand", seed, nonEmpty, len(c.queries), brand)
		}
	}
}

// A folding that breaks one rule of simple case folding makes the check
// fail on answers that follow the contract (package catalog's, which the
// test above holds to the reference): the check sees each rule.
func TestAudit13BrokenFoldFailsTheCheck(t *testing.T) {
	c := newCorpus(7, 4000, 3000)
	w := &Workload{Records: c.recs, Rows: c.rows, Queries: c.queries}
	cat := catalog.New()
	for _, r := range c.recs {
		if d := cat.Set(r); d != "" {
			t.Fatal(d)
		}
	}
	units := store.SKUUnits(c.rows)
	answers := make([][]catalog.Result, len(c.queries))
	for i, q := range c.queries {
		answers[i], _ = cat.Search(q, func(sku string) int64 { return units[sku] }, nil)
	}
	if res := Check(w, answers); !res.OK {
		t.Fatalf("the check fails answers that follow the contract: %v", res.Violations)
	}
	perRune := func(f func(rune) rune) func(string) string {
		return func(s string) string { return strings.Map(f, s) }
	}
	for _, v := range []struct {
		name string
		fold func(string) string
	}{
		{"none", func(s string) string { return s }},
		{"ASCII only", perRune(func(r rune) rune {
			if 'A' <= r && r <= 'Z' {
				return r + 'a' - 'A'
			}
			return r
		})},
		{"lowercase", perRune(unicode.ToLower)},
		{"İ and ı folded to i", perRune(func(r rune) rune {
			if r == '\u0130' || r == '\u0131' {
				return 'i'
			}
			return foldReferenceRune(r)
		})},
		{"Cherokee to lowercase", perRune(func(r rune) rune {
			if 0x13A0 <= r && r <= 0x13FF || 0xAB70 <= r && r <= 0xABBF {
				return unicode.ToLower(r)
			}
			return foldReferenceRune(r)
		})},
		{"the smallest rune of the orbit, lowercased (µ for μ, U+0345 for ι)", perRune(func(r rune) rune {
			if 0x13A0 <= r && r <= 0x13FF || 0xAB70 <= r && r <= 0xABBF {
				return foldReferenceRune(r)
			}
			least := r
			for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
				least = min(least, f)
			}
			if least == r && unicode.SimpleFold(r) == r {
				return r
			}
			return unicode.ToLower(least)
		})},
		{"uppercase", perRune(func(r rune) rune {
			if r == '\u0130' || r == '\u0131' {
				return r
			}
			return unicode.ToUpper(unicode.ToLower(r))
		})},
	} {
		res := check(w, answers, v.fold)
		if res.OK {
			t.Errorf("folding %s: the check passed", v.name)
			continue
		}
		t.Logf("folding %s: %d violations, first: %s", v.name, res.ViolationCount, res.Violations[0])
	}
}

// A record the contract refuses is named, not searched.
func TestAudit13ReferenceRefusesWhatTheContractRefuses(t *testing.T) {
	for _, r := range []catalog.Record{
		{SKU: "a", Title: "", Brand: "b"},
		{SKU: "a", Title: "t\x01", Brand: "b"},
		{SKU: "a", Title: "t", Brand: "\xff"},
		{SKU: strings.Repeat("s", 65), Title: "t", Brand: "b"},
		{SKU: "a", Title: strings.Repeat("t", 257), Brand: "b"},
	} {
		if _, d := NewReference([]catalog.Record{r}, nil); d == "" || !strings.Contains(d, "record") {
			t.Errorf("record %+q: detail %q, want one naming the record", r, d)
		}
	}
	ref, _ := NewReference([]catalog.Record{{SKU: "a", Title: "t", Brand: "b"}}, nil)
	for _, q := range []catalog.Query{{Prefix: ""}, {Prefix: "t", Offset: -1}, {Prefix: "t", Offset: 100001}, {Prefix: "t", Limit: 1001}, {Prefix: "t", Brand: "\x7f"}} {
		if _, d := ref.Search(q); d == "" {
			t.Errorf("query %+v: no detail", q)
		}
	}
}
