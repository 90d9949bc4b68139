package bench

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"allot/inventory"
	"allot/store"
	"allot/store/memory"
	"allot/workload"
)

func genWorkload(t testing.TB, preset string, ops int) *workload.Workload {
	t.Helper()
	p, err := workload.Preset(preset)
	if err != nil {
		t.Fatal(err)
	}
	p.Ops = ops
	w, err := workload.Generate(p)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func runMemory(t testing.TB, cfg RunConfig, w *workload.Workload) *Result {
	t.Helper()
	return runOn(t, cfg, memory.New(), w)
}

func runOn(t testing.TB, cfg RunConfig, st store.Store, w *workload.Workload) *Result {
	t.Helper()
	res, err := Run(context.Background(), cfg, st, w)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// faulty wraps a real store and breaks one rule on purpose, to prove the
// checker and the runner see it. Each hook may change the call or its
// result; nil hooks pass through.
type faulty struct {
	store.Store
	capture func(se store.Session, ctx context.Context, g inventory.GroupKey, n int64, lines []inventory.Line) (inventory.Result, error)
	release func(se store.Session, ctx context.Context, k inventory.RowKey, n int64) (inventory.Result, error)
	rows    func([]inventory.Row) []inventory.Row
}

func (f *faulty) Session(ctx context.Context) (store.Session, error) {
	se, err := f.Store.Session(ctx)
	if err != nil {
		return nil, err
	}
	return &faultySession{Session: se, f: f}, nil
}

func (f *faulty) Rows(ctx context.Context) ([]inventory.Row, error) {
	rows, err := f.Store.Rows(ctx)
	if err == nil && f.rows != nil {
		rows = f.rows(rows)
	}
	return rows, err
}

type faultySession struct {
	store.Session
	f *faulty
}

func (s *faultySession) Capture(ctx context.Context, g inventory.GroupKey, n int64, lines []inventory.Line) (inventory.Result, error) {
	if s.f.capture != nil {
		return s.f.capture(s.Session, ctx, g, n, lines)
	}
	return s.Session.Capture(ctx, g, n, lines)
}

func (s *faultySession) Release(ctx context.Context, k inventory.RowKey, n int64) (inventory.Result, error) {
	if s.f.release != nil {
		return s.f.release(s.Session, ctx, k, n)
	}
	return s.Session.Release(ctx, k, n)
}

// stalling wraps a store so that, once `after` calls have started, every
// call waits until a single pause of `pause` has passed: the whole store
// stops for that long, as a store does during a long fsync, a GC pause or
// a failover.
type stalling struct {
	store.Store
	after int64
	pause time.Duration

	calls atomic.Int64
	once  sync.Once
	until atomic.Int64 // unix ns the pause ends, 0 before it starts
}

func (s *stalling) Session(ctx context.Context) (store.Session, error) {
	se, err := s.Store.Session(ctx)
	if err != nil {
		return nil, err
	}
	return &stallingSession{Session: se, s: s}, nil
}

func (s *stalling) wait() {
	if s.calls.Add(1) == s.after {
		s.once.Do(func() { s.until.Store(time.Now().Add(s.pause).UnixNano()) })
	}
	if u := s.until.Load(); u != 0 {
		if d := time.Until(time.Unix(0, u)); d > 0 {
			time.Sleep(d)
		}
	}
}

type stallingSession struct {
	store.Session
	s *stalling
}

func (se *stallingSession) Capture(ctx context.Context, g inventory.GroupKey, n int64, lines []inventory.Line) (inventory.Result, error) {
	se.s.wait()
	return se.Session.Capture(ctx, g, n, lines)
}

func (se *stallingSession) Release(ctx context.Context, k inventory.RowKey, n int64) (inventory.Result, error) {
	se.s.wait()
	return se.Session.Release(ctx, k, n)
}

// conflicting is a session that reports conflict retries, like the SQL
// adapters do.
type conflicting struct {
	store.Session
	n int64
}

func (c *conflicting) ConflictRetries() int64 { return c.n }

func (c *conflicting) Capture(ctx context.Context, g inventory.GroupKey, n int64, lines []inventory.Line) (inventory.Result, error) {
	c.n++
	return c.Session.Capture(ctx, g, n, lines)
}

type conflictingStore struct{ store.Store }

func (s conflictingStore) Session(ctx context.Context) (store.Session, error) {
	se, err := s.Store.Session(ctx)
	return &conflicting{Session: se}, err
}

// oneWorker loads w into a memory store and returns a runner with one
// worker whose session is open, for driving exec directly.
func oneWorker(tb testing.TB, w *workload.Workload) (*runner, *worker, *memory.Store) {
	tb.Helper()
	p, err := NewPlan(w)
	if err != nil {
		tb.Fatal(err)
	}
	cfg := RunConfig{Workers: 1}
	if err := cfg.Validate(); err != nil {
		tb.Fatal(err)
	}
	st := memory.New()
	if err := st.Load(context.Background(), w.Initial); err != nil {
		tb.Fatal(err)
	}
	r := newRunner(p, &cfg)
	if err := r.openSessions(context.Background(), st); err != nil {
		tb.Fatal(err)
	}
	return r, r.workers[0], st
}
