// Package embedded is the bench store "embedded": allot's engine running in
// the bench's own process, on a data directory (a fresh temporary one under
// the project's .allot/tmp, removed on Close, unless store.Config.DataDir
// names one).
//
// Every session calls the engine directly; there is no connection and no
// serialisation, so the gap between this store and "memory" is the cost of
// the pipeline and the journal alone.
package embedded

import (
	"context"
	"fmt"
	"os"

	"allot/engine"
	"allot/internal/fsinfo"
	"allot/inventory"
	"allot/store"
	"allot/store/rowrecords"
)

func init() {
	store.Register(store.Registration{
		Name:  "embedded",
		About: "allot's engine in-process, journal in --data (default: a temporary directory)",
		Open:  Open,
		// Sessions are store.Pipeliner and CheckoutPipeliner; searches
		// are one at a time.
		Pipelines: []string{"ims", "checkout"},
		Refuses:   rowrecords.Refusal,
	})
}

// Store is the embedded engine as a bench store.
type Store struct {
	eng      *engine.Engine
	cfg      engine.Config
	tempDir  string // removed on Close when we made it
	pipeline int    // ops a session keeps in flight (store.Config.Pipeline)
}

// Open opens an engine on cfg.DataDir, or on a new temporary directory.
func Open(_ context.Context, cfg store.Config) (store.Store, error) {
	dur, err := engine.ParseDurability(string(cfg.Durability))
	if err != nil {
		return nil, err
	}
	s := &Store{cfg: engine.Config{Dir: cfg.DataDir, Durability: dur}, pipeline: cfg.Pipeline}
	if s.cfg.Dir == "" {
		// Beside the project's other data, not in the system's temporary
		// folder: that is often tmpfs, where fsync proves nothing.
		dir, err := fsinfo.TempDataDir("embedded-")
		if err != nil {
			return nil, fmt.Errorf("embedded: temporary data directory: %w", err)
		}
		s.cfg.Dir, s.tempDir = dir, dir
	}
	if err := s.open(); err != nil {
		s.removeTemp()
		return nil, err
	}
	return s, nil
}

func (s *Store) open() error {
	eng, err := engine.Open(s.cfg)
	if err != nil {
		return fmt.Errorf("embedded: %w", err)
	}
	s.eng = eng
	return nil
}

func (s *Store) removeTemp() {
	if s.tempDir != "" {
		os.RemoveAll(s.tempDir)
	}
}

// DataDir returns the engine's data directory (store.DataDirer).
func (s *Store) DataDir() string { return s.cfg.Dir }

// Engine returns the engine, for tests.
func (s *Store) Engine() *engine.Engine { return s.eng }

// Load replaces the state with rows: existing rows are set to count 0 when
// absent from rows (the engine never deletes a row), then every row is
// stocked, with many requests in flight at once so that they share frames.
// A data directory with live holds (an earlier run's) is refused.
func (s *Store) Load(ctx context.Context, rows []inventory.Row) error {
	if err := store.CheckRows(rows); err != nil {
		return fmt.Errorf("embedded: load: %w", err)
	}
	// The engine deletes no hold, and a live one gives its units back
	// when it ends: over a data directory an earlier run left holds in,
	// the loaded rows would grow from nowhere mid-run.
	if n := s.eng.Stats().State.HoldsActive; n > 0 {
		return fmt.Errorf("embedded: load: %s holds %d live hold(s) of an earlier run, whose units would come back to the loaded rows when they end: use a fresh data directory", s.cfg.Dir, n)
	}
	old, err := s.eng.Rows()
	if err != nil {
		return fmt.Errorf("embedded: load: %w", err)
	}
	want := make(map[inventory.RowKey]bool, len(rows))
	for _, r := range rows {
		want[r.Key] = true
	}
	ops := make([]inventory.Op, 0, len(rows)+len(old))
	for _, r := range old {
		if !want[r.Key] && r.Count != 0 {
			ops = append(ops, inventory.Stock(r.Key, 0, r.Price))
		}
	}
	for _, r := range rows {
		ops = append(ops, inventory.Stock(r.Key, r.Count, r.Price))
	}
	const window = 4096
	reqs := make([]*engine.Request, 0, window)
	flush := func() error {
		for _, r := range reqs {
			if err := r.Wait(); err != nil {
				return fmt.Errorf("embedded: load: %w", err)
			}
			if r.Result.Code != inventory.CodeOK {
				return fmt.Errorf("embedded: load row %v: %s %s", r.Op.Key, r.Result.Code, r.Result.Detail)
			}
		}
		reqs = reqs[:0]
		return nil
	}
	for i := range ops {
		if err := ctx.Err(); err != nil {
			return err
		}
		r := engine.NewRequest()
		r.Op = ops[i]
		if err := s.eng.Submit(r); err != nil {
			return fmt.Errorf("embedded: load: %w", err)
		}
		reqs = append(reqs, r)
		if len(reqs) == window {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}

// Rows returns every row.
func (s *Store) Rows(context.Context) ([]inventory.Row, error) { return s.eng.Rows() }

// Session returns a handle that calls the engine directly.
func (s *Store) Session(context.Context) (store.Session, error) {
	return newCheckoutSession(&session{eng: s.eng, req: engine.NewRequest(), depth: max(1, s.pipeline)}), nil
}

// Describe says where the data lives and in which mode.
func (s *Store) Describe(context.Context) (string, error) {
	return fmt.Sprintf("allot engine in-process, durability %s, data %s", s.cfg.Durability, s.cfg.Dir), nil
}

// Close closes the engine (making the journal durable) and removes a
// temporary data directory.
func (s *Store) Close() error {
	err := s.eng.Close()
	s.removeTemp()
	return err
}

// session reuses its requests, so a capture allocates nothing.
type session struct {
	eng      *engine.Engine
	req      *engine.Request
	depth    int
	pipeline []*engine.Request // for Pipeline, made on first use
}

var _ store.Pipeliner = (*session)(nil)

func (s *session) PipelineDepth() int { return s.depth }

// Pipeline submits every op before waiting for the first, so that they
// share journal writes (and fdatasyncs) with each other and with other
// sessions.
func (s *session) Pipeline(_ context.Context, ops []inventory.Op, results []inventory.Result) error {
	for len(s.pipeline) < len(ops) {
		s.pipeline = append(s.pipeline, engine.NewRequest())
	}
	submitted := 0
	var err error
	for i := range ops {
		r := s.pipeline[i]
		r.Op, r.Lines = ops[i], results[i].Lines
		if err = s.eng.Submit(r); err != nil {
			break
		}
		submitted++
	}
	for i := 0; i < submitted; i++ {
		r := s.pipeline[i]
		if werr := r.Wait(); werr != nil && err == nil {
			err = werr
		}
		results[i] = r.Result
		r.Lines = nil
	}
	return err
}

// Capture and Release set the op in place in the session's request and
// return its result from there: an op is 168 bytes and a result 160,
// and passing them by value through a helper copied each once more per
// call.
func (s *session) Capture(_ context.Context, g inventory.GroupKey, n int64, lines []inventory.Line) (inventory.Result, error) {
	s.req.Op, s.req.Lines = inventory.Capture(g, n), lines
	return s.run()
}

func (s *session) Release(_ context.Context, k inventory.RowKey, n int64) (inventory.Result, error) {
	s.req.Op, s.req.Lines = inventory.Release(k, n), nil
	return s.run()
}

// run submits the op set in the session's request and waits for it.
func (s *session) run() (inventory.Result, error) {
	r := s.req
	if err := s.eng.Submit(r); err != nil {
		r.Lines = nil
		return inventory.Result{}, err
	}
	err := r.Wait()
	r.Lines = nil
	return r.Result, err
}

func (s *session) Close() error { return nil }
