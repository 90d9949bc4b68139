package search

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"allot/bench"
	"allot/catalog"
	"allot/inventory"
	"allot/store"
)

// refStore is an in-process store.Searcher over package catalog, with a
// switch that breaks it in one way, to prove the check sees it.
type refStore struct {
	// mu serialises the sessions' searches: a Catalog is not safe for
	// concurrent use (a brand query's merge uses its scratch), as the
	// engine, which calls it under its own lock, knows.
	mu     sync.Mutex
	cat    *catalog.Catalog
	units  map[string]int64
	broken string
	recs   []catalog.Record
}

func (s *refStore) Load(context.Context, []inventory.Row) error { return nil }
func (s *refStore) Rows(context.Context) ([]inventory.Row, error) {
	return nil, nil
}
func (s *refStore) Close() error                                   { return nil }
func (s *refStore) Session(context.Context) (store.Session, error) { return refSession{s}, nil }

func (s *refStore) LoadCatalog(_ context.Context, recs []catalog.Record, rows []inventory.Row) error {
	s.cat, s.units, s.recs = catalog.New(), store.SKUUnits(rows), recs
	for i := range recs {
		if d := s.cat.Set(recs[i]); d != "" {
			return errors.New(d)
		}
	}
	return nil
}

type refSession struct{ s *refStore }

func (refSession) Capture(context.Context, inventory.GroupKey, int64, []inventory.Line) (inventory.Result, error) {
	return inventory.Result{}, errors.New("not here")
}
func (refSession) Release(context.Context, inventory.RowKey, int64) (inventory.Result, error) {
	return inventory.Result{}, errors.New("not here")
}
func (refSession) Close() error { return nil }

func (r refSession) Search(_ context.Context, q catalog.Query, out []catalog.Result) ([]catalog.Result, error) {
	s := r.s
	avail := func(sku string) int64 { return s.units[sku] }
	switch s.broken {
	case "no-folding":
		// Case-sensitive: what a binary collation without a folded column
		// answers.
		return bruteSearch(s.recs, q, func(t string) string { return t }, avail), nil
	case "ascii-folding":
		// Folds ASCII only: what lower() in a C locale does.
		return bruteSearch(s.recs, q, func(t string) string {
			return strings.Map(func(r rune) rune {
				if r >= utf8.RuneSelf {
					return r
				}
				return catalog.FoldRune(r)
			}, t)
		}, avail), nil
	case "available-zero":
		avail = func(string) int64 { return 0 }
	case "one-short":
		q.Limit = max(1, q.Limit-1)
	}
	s.mu.Lock()
	out, d := s.cat.Search(q, avail, out)
	s.mu.Unlock()
	if d != "" {
		return nil, errors.New(d)
	}
	return out, nil
}

// bruteSearch filters recs with fold and sorts by (fold(title), sku).
func bruteSearch(recs []catalog.Record, q catalog.Query, fold func(string) string, avail func(string) int64) []catalog.Result {
	var hits []catalog.Record
	for _, r := range recs {
		if strings.HasPrefix(fold(r.Title), fold(q.Prefix)) && (q.Brand == "" || strings.HasPrefix(fold(r.Brand), fold(q.Brand))) {
			hits = append(hits, r)
		}
	}
	slices.SortFunc(hits, func(a, b catalog.Record) int {
		if c := strings.Compare(fold(a.Title), fold(b.Title)); c != 0 {
			return c
		}
		return strings.Compare(a.SKU, b.SKU)
	})
	var out []catalog.Result
	for i := q.Offset; i < len(hits) && len(out) < q.Limit; i++ {
		out = append(out, catalog.Result{SKU: hits[i].SKU, Title: hits[i].Title, Brand: hits[i].Brand, Available: avail(hits[i].SKU)})
	}
	return out
}

func smallWorkload(t *testing.T) *Workload { return workloadOf(t, 20000, 3000) }

func workloadOf(t *testing.T, records, queries int) *Workload {
	w, err := Generate(Params{Records: records, Queries: queries, Seed: 3, BrandShare: 0.3})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func TestRunChecksEveryStoreAnswer(t *testing.T) {
	w := smallWorkload(t)
	res, err := Run(context.Background(), w, Options{}, bench.RunConfig{Workers: 4, Store: "ref"}, &refStore{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != bench.StatusOK || !res.Check.OK || res.Ops != 3000 || res.Errors != 0 {
		t.Fatalf("the reference store failed: %+v", res.Check)
	}
	if res.Extra["checked_queries"] != 1000 || res.Extra["results_returned"].(int64) == 0 {
		t.Fatalf("extra: %+v", res.Extra)
	}
}

func TestCheckCatchesBrokenStores(t *testing.T) {
	w := workloadOf(t, 3000, 1000)
	for _, broken := range []string{"no-folding", "available-zero", "one-short", "ascii-folding"} {
		res, err := Run(context.Background(), w, Options{}, bench.RunConfig{Workers: 2, Store: broken}, &refStore{broken: broken})
		if err != nil {
			t.Fatal(err)
		}
		if res.Check.OK || res.Status != bench.StatusCheckFailed || res.Check.ViolationCount == 0 {
			t.Errorf("%s: the check passed a broken store", broken)
			continue
		}
		t.Logf("%s: %d violations, first: %s", broken, res.Check.ViolationCount, res.Check.Violations[0])
	}
}

// A duration bound that stops the timed part early still leaves the whole
// sample checked.
func TestSampleFinishedAfterDuration(t *testing.T) {
	w := smallWorkload(t)
	res, err := Run(context.Background(), w, Options{CheckSample: 2000}, bench.RunConfig{Workers: 1, Duration: 1, Store: "ref"}, &refStore{})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Check.OK || res.Extra["checked_queries"] != 2000 || res.Ops >= 2000 {
		t.Fatalf("ops %d, check %+v, extra %+v", res.Ops, res.Check, res.Extra)
	}
}

func TestGenerate(t *testing.T) {
	w := smallWorkload(t)
	again := smallWorkload(t)
	oneRune, nonASCII, brand := 0, 0, 0
	for i, q := range w.Queries {
		if q != again.Queries[i] {
			t.Fatal("same params, other queries")
		}
		if d := q.Check(); d != "" {
			t.Fatalf("query %d: %s", i, d)
		}
		if utf8.RuneCountInString(q.Prefix) == 1 {
			oneRune++
		}
		if q.Brand != "" {
			brand++
		}
	}
	for i := range w.Records {
		if d := w.Records[i].Check(); d != "" {
			t.Fatalf("record %d: %s", i, d)
		}
		for _, r := range w.Records[i].Title {
			if r >= utf8.RuneSelf {
				nonASCII++
				break
			}
		}
	}
	if oneRune < len(w.Queries)/8 || brand == 0 || nonASCII < len(w.Records)/10 {
		t.Fatalf("one-rune prefixes %d, brand queries %d, non-ASCII titles %d", oneRune, brand, nonASCII)
	}
}

func TestUnsupportedStore(t *testing.T) {
	w := smallWorkload(t)
	_, err := Run(context.Background(), w, Options{}, bench.RunConfig{Workers: 1, Store: "plain"}, plainStore{})
	if !errors.Is(err, bench.ErrUnsupported) {
		t.Fatalf("want ErrUnsupported, got %v", err)
	}
}

type plainStore struct{}

func (plainStore) Load(context.Context, []inventory.Row) error    { return nil }
func (plainStore) Rows(context.Context) ([]inventory.Row, error)  { return nil, nil }
func (plainStore) Close() error                                   { return nil }
func (plainStore) Session(context.Context) (store.Session, error) { return nil, nil }
