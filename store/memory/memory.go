package memory

import (
	"context"
	"fmt"
	"sync"

	"allot/inventory"
	"allot/store"
)

func init() {
	store.Register(store.Registration{
		Name:  "memory",
		About: "the state machine behind one mutex, in-process: the bench's overhead baseline (not durable)",
		Open:  Open,
		// No records, catalog or checkout: captures and releases only.
		Workloads: []string{"ims"},
		// Nothing leaves the process: no fdatasync bound applies.
		Volatile: true,
	})
}

// Store is a mutex around inventory.State. A single mutex rather than one
// per group: the baseline should be the simplest correct store, and under
// the bench's few workers the critical section (a map lookup and a few
// subtractions) is short enough that the lock is rarely the bound.
type Store struct {
	mu    sync.Mutex
	state *inventory.State
}

// Open returns an empty store. The config is ignored: the store keeps
// nothing beyond the process, whatever the durability asked.
func Open(context.Context, store.Config) (store.Store, error) {
	return New(), nil
}

// New returns an empty store.
func New() *Store { return &Store{state: inventory.NewState()} }

// Load replaces the state with rows. The new state is built aside and
// swapped in, so an invalid row leaves the old state untouched.
func (s *Store) Load(ctx context.Context, rows []inventory.Row) error {
	next := inventory.NewState()
	for i := range rows {
		if i%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		op := inventory.Stock(rows[i].Key, rows[i].Count, rows[i].Price)
		if res := next.Apply(&op, nil); res.Code != inventory.CodeOK {
			return fmt.Errorf("memory: load row %v: %s: %s", rows[i].Key, res.Code, res.Detail)
		}
	}
	s.mu.Lock()
	s.state = next
	s.mu.Unlock()
	return nil
}

// Rows returns every row.
func (s *Store) Rows(context.Context) ([]inventory.Row, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state.Rows(), nil
}

// Session returns a handle on the shared state.
func (s *Store) Session(context.Context) (store.Session, error) { return session{s}, nil }

// Describe says what the store is.
func (s *Store) Describe(context.Context) (string, error) {
	return "in-process state machine behind one mutex (no durability)", nil
}

// Close does nothing: there is nothing to release.
func (s *Store) Close() error { return nil }

func (s *Store) apply(op *inventory.Op, lines []inventory.Line) inventory.Result {
	s.mu.Lock()
	res := s.state.Apply(op, lines)
	s.mu.Unlock()
	return res
}

type session struct{ s *Store }

func (se session) Capture(_ context.Context, g inventory.GroupKey, n int64, lines []inventory.Line) (inventory.Result, error) {
	op := inventory.Capture(g, n)
	return se.s.apply(&op, lines), nil
}

func (se session) Release(_ context.Context, k inventory.RowKey, n int64) (inventory.Result, error) {
	op := inventory.Release(k, n)
	return se.s.apply(&op, nil), nil
}

func (se session) Close() error { return nil }
