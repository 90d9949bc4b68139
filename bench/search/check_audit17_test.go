package search

import (
	"context"
	"slices"
	"strings"
	"testing"

	"allot/bench"
	"allot/catalog"
	"allot/inventory"
	"allot/store"
)

// wrongStore answers searches by a walk over every record (the contract
// written a third time, with package catalog's folding), with one rule
// broken by name: each is one way a store's search can go wrong that the
// check claims to see.
type wrongStore struct {
	refStore
	wrong string
	rows  []inventory.Row
	all   []wrongRecord
}

func (s *wrongStore) LoadCatalog(ctx context.Context, recs []catalog.Record, rows []inventory.Row) error {
	s.rows = rows
	if err := s.refStore.LoadCatalog(ctx, recs, rows); err != nil {
		return err
	}
	// Every record (the last of a SKU), folded, sorted by (folded
	// title, SKU) or as the broken variant sorts.
	last := map[string]int{}
	for i, r := range recs {
		last[r.SKU] = i
	}
	s.all = s.all[:0]
	for i, r := range recs {
		if last[r.SKU] == i {
			s.all = append(s.all, wrongRecord{r, s.fold()(r.Title), s.fold()(r.Brand)})
		}
	}
	slices.SortFunc(s.all, func(a, b wrongRecord) int {
		switch s.wrong {
		case "raw-order":
			// Ordered by the title as stored, not as folded.
			if c := strings.Compare(a.Title, b.Title); c != 0 {
				return c
			}
		case "tie-order":
			// Equal folded titles by SKU descending.
			if c := strings.Compare(a.title, b.title); c != 0 {
				return c
			}
			return strings.Compare(b.SKU, a.SKU)
		default:
			if c := strings.Compare(a.title, b.title); c != 0 {
				return c
			}
		}
		return strings.Compare(a.SKU, b.SKU)
	})
	return nil
}

type wrongRecord struct {
	catalog.Record
	title, brand string // folded
}

func (s *wrongStore) fold() func(string) string {
	if s.wrong == "lower-only" {
		// strings.ToLower is not case folding: ſ, ς, K (Kelvin), İ and
		// others keep a form their folded partners do not have.
		return strings.ToLower
	}
	return catalog.Fold
}

func (s *wrongStore) Session(context.Context) (store.Session, error) { return wrongSession{s}, nil }

type wrongSession struct{ s *wrongStore }

func (wrongSession) Capture(context.Context, inventory.GroupKey, int64, []inventory.Line) (inventory.Result, error) {
	return inventory.Result{}, nil
}
func (wrongSession) Release(context.Context, inventory.RowKey, int64) (inventory.Result, error) {
	return inventory.Result{}, nil
}
func (wrongSession) Close() error { return nil }

func (ws wrongSession) Search(_ context.Context, q catalog.Query, out []catalog.Result) ([]catalog.Result, error) {
	s := ws.s
	if q.Limit == 0 {
		q.Limit = 20
	}
	fold := s.fold()
	switch s.wrong {
	case "offset-overlap":
		q.Offset = max(0, q.Offset-1) // page n repeats page n-1's last result
	case "offset-gap":
		q.Offset++ // a result between two pages is never shown
	case "limit-plus-one":
		q.Limit++
	}
	prefix, brand := fold(q.Prefix), fold(q.Brand)
	if s.wrong == "brand-case-sensitive" {
		brand = q.Brand
	}
	skip := q.Offset
	out = out[:0]
	for _, r := range s.all {
		if len(out) >= q.Limit {
			break
		}
		match := strings.HasPrefix(r.title, prefix)
		switch s.wrong {
		case "no-stop":
			// A seek to the prefix that does not stop at the first key
			// past it: the titles after the matches fill the page.
			match = r.title >= prefix
		case "missing-match":
			match = match && !strings.HasSuffix(r.SKU, "3")
		}
		if !match {
			continue
		}
		if q.Brand != "" {
			b := r.brand
			if s.wrong == "brand-case-sensitive" {
				b = r.Brand
			}
			if s.wrong != "brand-ignored" && !strings.HasPrefix(b, brand) {
				continue
			}
		}
		if skip > 0 {
			skip--
			continue
		}
		out = append(out, catalog.Result{SKU: r.SKU, Title: r.Title, Brand: r.Brand, Available: s.available(r.SKU)})
	}
	return out, nil
}

// available is the SKU's units over all its rows, or as the broken
// variant sums them.
func (s *wrongStore) available(sku string) int64 {
	if s.wrong != "first-row-only" {
		return s.units[sku]
	}
	for _, r := range s.rows {
		if r.Key.SKU == sku {
			return r.Count // the first row's units alone
		}
	}
	return 0
}

// Every property of an answer the check claims to compare (which records
// match, their order, the page, the brand filter, the folding, the
// available units) fails the run when a store breaks it; the same walk
// with no rule broken passes.
func TestAudit17CheckCatchesEveryWrongAnswer(t *testing.T) {
	w := workloadOf(t, 3000, 1000)
	runOn := func(wrong string) *bench.Result {
		res, err := Run(context.Background(), w, Options{}, bench.RunConfig{Workers: 2, Store: "wrong-" + wrong}, &wrongStore{wrong: wrong})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := runOn(""); !res.Check.OK || res.Errors != 0 {
		t.Fatalf("the walk with no rule broken failed: %v", res.Check.Violations)
	}
	for _, wrong := range []string{
		"missing-match", "no-stop", "raw-order", "tie-order", "offset-overlap", "offset-gap",
		"limit-plus-one", "brand-ignored", "brand-case-sensitive", "first-row-only", "lower-only",
	} {
		res := runOn(wrong)
		if res.Check.OK || res.Status != bench.StatusCheckFailed || res.Check.ViolationCount == 0 {
			t.Errorf("%s: the check passed a broken store", wrong)
			continue
		}
		t.Logf("%s: %d violations, first: %s", wrong, res.Check.ViolationCount, res.Check.Violations[0])
	}
}
