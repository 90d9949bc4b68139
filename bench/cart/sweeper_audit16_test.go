package cart

import (
	"context"
	"errors"
	"strings"
	"testing"

	"allot/bench"
	"allot/store"
)

// failingSweeperStore is the reference store as a CheckoutPreparer whose
// sweeper failed a pass, as a peer's does when its sweeper connection is
// lost mid-run.
type failingSweeperStore struct {
	*refStore
	stopped int
}

func (s *failingSweeperStore) PrepareCheckout(context.Context, store.CheckoutConfig) (func() error, error) {
	return func() error {
		s.stopped++
		return errors.New("sweeper pass: connection reset")
	}, nil
}

// The first error of a peer's expiry sweeper fails the run's check: it was
// dropped (a deferred stop()), and a run whose sweeper died showed at most
// holds "still held" with no reason given.
func TestSweeperErrorIsReported(t *testing.T) {
	p := Params{Preset: PresetHot, Carts: 50, Seed: 3, Lines: 2, ConfirmShare: 0.7, CancelShare: 0.2}
	w, err := Generate(p)
	if err != nil {
		t.Fatal(err)
	}
	cfg := bench.KindConfig{RunConfig: bench.RunConfig{Workers: 2, Store: "ref"}}
	if err := cfg.RunConfig.Validate(); err != nil {
		t.Fatal(err)
	}
	st := &failingSweeperStore{refStore: newRefStore(flawNone)}
	res, err := Run(context.Background(), ModeCheckout, w, fastOptions(), cfg, st)
	if err != nil {
		t.Fatal(err)
	}
	if st.stopped != 1 {
		t.Fatalf("the sweeper was stopped %d times, want once", st.stopped)
	}
	found := false
	for _, s := range res.Check.Violations {
		found = found || strings.Contains(s, "connection reset")
	}
	if res.Check.OK || !found {
		t.Fatalf("check ok %v, violations %q: the sweeper's failure is not in the check", res.Check.OK, res.Check.Violations)
	}
	if res.Errors != 0 {
		t.Fatalf("%d ops counted failed: the sweeper's failure is no op's", res.Errors)
	}
}
