package search

import (
	"context"
	"strings"
	"testing"

	"allot/bench"
	"allot/catalog"
	"allot/store"
)

// emptyStore finds nothing, ever: the answer of an index that was never
// built, or of a query sent to the wrong table.
type emptyStore struct{ refStore }

func (s *emptyStore) Session(context.Context) (store.Session, error) { return emptySession{}, nil }

type emptySession struct{ refSession }

func (emptySession) Search(_ context.Context, _ catalog.Query, out []catalog.Result) ([]catalog.Result, error) {
	return out[:0], nil
}

// An empty answer is compared like any other: it fails every query the
// reference has results for.
func TestPowerEmptyAnswers(t *testing.T) {
	w := workloadOf(t, 3000, 1000)
	res, err := Run(context.Background(), w, Options{}, bench.RunConfig{Workers: 2, Store: "empty"}, &emptyStore{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Check.OK || res.Status != bench.StatusCheckFailed || !strings.Contains(res.Check.Violations[0], "0 results, want") {
		t.Fatalf("a store that finds nothing passed the check: %+v", res.Check)
	}
}

// A sample whose reference answers are all empty compares nothing: any
// store that also answers nothing passes. The check must say it proved
// nothing rather than pass.
func TestPowerSampleThatComparesNothing(t *testing.T) {
	w := workloadOf(t, 3000, 1000)
	for i := range w.Queries {
		// Past every match: the reference answers nothing.
		w.Queries[i].Offset = 100_000
	}
	answers := make([][]catalog.Result, len(w.Queries))
	c := Check(w, answers)
	if c.OK {
		t.Fatal("a check that compared only empty answers passed")
	}
	if !strings.Contains(strings.Join(c.Violations, "\n"), "compared nothing") {
		t.Fatalf("violations do not say the check compared nothing: %q", c.Violations)
	}
	// The generated sample is never like that: most queries have results.
	w = workloadOf(t, 3000, 1000)
	c = Check(w, referenceAnswers(t, w))
	if !c.OK {
		t.Fatalf("the reference's own answers failed: %v", c.Violations)
	}
}

func referenceAnswers(t *testing.T, w *Workload) [][]catalog.Result {
	t.Helper()
	s := &refStore{}
	if err := s.LoadCatalog(context.Background(), w.Records, w.Rows); err != nil {
		t.Fatal(err)
	}
	out := make([][]catalog.Result, len(w.Queries))
	for i, q := range w.Queries {
		r, err := refSession{s}.Search(context.Background(), q, nil)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = r
	}
	return out
}
