package cart

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"allot/bench"
	"allot/store"
)

// conflictingStore is the reference store whose sessions report, through
// store.Retrier, one conflict retry per Order and per Hold call, as a SQL
// store's sessions count the deadlocks they retried inside a call.
type conflictingStore struct {
	*refStore
	retried atomic.Int64
}

func (s *conflictingStore) Session(context.Context) (store.Session, error) {
	return &conflictingSession{refStore: s.refStore, store: s}, nil
}

type conflictingSession struct {
	*refStore
	store *conflictingStore
	n     int64
}

func (s *conflictingSession) Order(ctx context.Context, key string, lines []store.CartLine, res *store.HoldResult) error {
	s.n++
	s.store.retried.Add(1)
	return s.refStore.Order(ctx, key, lines, res)
}

func (s *conflictingSession) Hold(ctx context.Context, id string, ttl time.Duration, lines []store.CartLine, res *store.HoldResult) error {
	s.n++
	s.store.retried.Add(1)
	return s.refStore.Hold(ctx, id, ttl, lines, res)
}

func (s *conflictingSession) ConflictRetries() int64 { return s.n }

// The transactions a store retried inside checkout and order calls
// (deadlocks, serialization failures, vinyl conflicts) reach the result,
// as they do for the reservation workload: hidden, they would make a store
// that retries half its carts look as clean as one that never conflicts.
func TestConflictRetriesAreReported(t *testing.T) {
	for _, mode := range []Mode{ModeOrder, ModeCheckout} {
		t.Run(mode.String(), func(t *testing.T) {
			p := Params{Preset: PresetHot, Carts: 300, Seed: 5, Lines: 2, ConfirmShare: 0.7, CancelShare: 0.2, ResendShare: 0.1}
			if mode == ModeOrder {
				p.ConfirmShare, p.CancelShare = 1, 0
			}
			w, err := Generate(p)
			if err != nil {
				t.Fatal(err)
			}
			cfg := bench.KindConfig{RunConfig: bench.RunConfig{Workers: 4, Store: "ref"}}
			if err := cfg.RunConfig.Validate(); err != nil {
				t.Fatal(err)
			}
			st := &conflictingStore{refStore: newRefStore(flawNone)}
			res, err := Run(context.Background(), mode, w, fastOptions(), cfg, st)
			if err != nil {
				t.Fatal(err)
			}
			if !res.Check.OK {
				t.Fatalf("check failed: %v", res.Check.Violations)
			}
			if want := st.retried.Load(); want == 0 || res.ConflictRetries != want {
				t.Fatalf("conflict retries = %d, the sessions retried %d", res.ConflictRetries, want)
			}
		})
	}
}

// describingStore is the reference store as an EmptyBrancher whose
// description says when its branches are empty, as the dtm store's does.
type describingStore struct {
	*refStore
	empty atomic.Bool
}

func (s *describingStore) SetEmptyBranches(empty bool) { s.empty.Store(empty) }

func (s *describingStore) Describe(context.Context) (string, error) {
	if s.empty.Load() {
		return "ref sagas; branches empty", nil
	}
	return "ref sagas", nil
}

func (s *describingStore) Session(context.Context) (store.Session, error) {
	return &describingSession{refStore: s.refStore, store: s}, nil
}

type describingSession struct {
	*refStore
	store *describingStore
}

func (s *describingSession) Order(ctx context.Context, key string, lines []store.CartLine, res *store.HoldResult) error {
	if s.store.empty.Load() {
		res.Reset()
		return nil
	}
	return s.refStore.Order(ctx, key, lines, res)
}

// A run with empty branches is described as one: the report shows the
// store's description and not Result.Extra, and without it an empty-branch
// run (the coordinator's cost alone) reads as sagas that took stock.
func TestEmptyBranchesAreInTheDescription(t *testing.T) {
	p := Params{Preset: PresetHot, Carts: 50, Seed: 2, Lines: 2, ConfirmShare: 1}
	w, err := Generate(p)
	if err != nil {
		t.Fatal(err)
	}
	cfg := bench.KindConfig{RunConfig: bench.RunConfig{Workers: 2, Store: "ref"}}
	if err := cfg.RunConfig.Validate(); err != nil {
		t.Fatal(err)
	}
	st := &describingStore{refStore: newRefStore(flawNone)}
	res, err := Run(context.Background(), ModeOrder, w, Options{EmptyBranches: true}, cfg, st)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Check.OK {
		t.Fatalf("check failed: %v", res.Check.Violations)
	}
	if !strings.Contains(res.Description, "branches empty") {
		t.Fatalf("an empty-branch run is described as %q", res.Description)
	}
	res, err = Run(context.Background(), ModeOrder, w, Options{}, cfg, st)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(res.Description, "branches empty") {
		t.Fatalf("a run with branches is described as %q", res.Description)
	}
}
