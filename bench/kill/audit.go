package kill

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"allot/inventory"
	"allot/store"
)

// Defaults of Config.
const (
	WorkersDefault      = 16
	OpsMaxDefault       = 200_000
	KillAfterMinDefault = 300 * time.Millisecond
	KillAfterMaxDefault = 1500 * time.Millisecond
	ReadTimeoutDefault  = 60 * time.Second
	// stopWait bounds how long workers may take to notice the kill (their
	// in-flight op failing) before their context is cancelled.
	stopWait = 15 * time.Second
)

// Server is the process the audit crashes. Implementations live where
// processes may be started and stopped (cmd/allot).
type Server interface {
	// Kill crashes the server with SIGKILL and returns once it is gone.
	Kill(ctx context.Context) error
	// Start starts it again on the same data and address, in the same
	// durability mode, and returns once it answers.
	Start(ctx context.Context) error
}

// Config is one audit: one store in one durability mode, Kills rounds.
type Config struct {
	// Store and Durability label the result.
	Store      string
	Durability store.Durability
	// Kills is the number of rounds; each ends in one SIGKILL.
	Kills int
	// Workers is the number of sessions sending ops at once.
	Workers int
	// Seed decides the ops and the kill moments.
	Seed uint64
	// KillAfterMin and KillAfterMax bound the moment of the kill, counted
	// from the first op of the round, drawn uniformly between them.
	KillAfterMin, KillAfterMax time.Duration
	// OpsMax bounds the ops of one round (rows are loaded for them).
	OpsMax int
	// ReadTimeout bounds reading the rows back after the restart.
	ReadTimeout time.Duration
	// Open connects to the running server (a new store each round).
	Open func(ctx context.Context) (store.Store, error)
	// Server kills and restarts it.
	Server Server
	// Log receives a line per round; nil discards.
	Log io.Writer
	// RunID prefixes every SKU the audit loads (default: a fresh random
	// one), so that rows another audit left on the same server (a server
	// that recovers an old state, as Tarantool with wal_mode=none does)
	// are never taken for this one's.
	RunID string
}

// Validate fills defaults and checks the fields.
func (c *Config) Validate() error {
	if c.Workers == 0 {
		c.Workers = WorkersDefault
	}
	if c.OpsMax == 0 {
		c.OpsMax = OpsMaxDefault
	}
	if c.KillAfterMin == 0 && c.KillAfterMax == 0 {
		c.KillAfterMin, c.KillAfterMax = KillAfterMinDefault, KillAfterMaxDefault
	}
	if c.ReadTimeout == 0 {
		c.ReadTimeout = ReadTimeoutDefault
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
	if c.RunID == "" {
		c.RunID = fmt.Sprintf("k%08x", rand.Uint32())
	}
	switch {
	case c.Kills < 1:
		return fmt.Errorf("kill: kills must be at least 1, got %d", c.Kills)
	case c.Workers < 1:
		return fmt.Errorf("kill: workers must be at least 1, got %d", c.Workers)
	case c.OpsMax < c.Workers:
		return fmt.Errorf("kill: ops per round (%d) must be at least the workers (%d)", c.OpsMax, c.Workers)
	case c.ReadTimeout < 0:
		return fmt.Errorf("kill: read timeout must be positive, got %v", c.ReadTimeout)
	case c.KillAfterMin < 0 || c.KillAfterMax < c.KillAfterMin:
		return fmt.Errorf("kill: kill moment window [%v, %v] is not a window", c.KillAfterMin, c.KillAfterMax)
	case c.Open == nil || c.Server == nil:
		return errors.New("kill: Open and Server are required")
	}
	return nil
}

// Result is what an audit found, summed over its rounds.
type Result struct {
	Store      string `json:"store"`
	Durability string `json:"durability"`
	// Kills is the number of rounds that ended in a kill and a restart.
	Kills int `json:"kills"`
	// Acked counts ops the store acknowledged (a reply, success or not).
	Acked int64 `json:"acked"`
	// InFlight counts ops whose call failed at the kill: fate unknown to
	// the client.
	InFlight int64 `json:"in_flight"`
	// LostAcked counts acknowledged ops the restarted server did not have.
	LostAcked int64 `json:"lost_acked"`
	// AppliedUnacked counts in-flight ops the restarted server had applied.
	AppliedUnacked int64 `json:"applied_unacked"`
	// HalfApplied counts captures of which some rows were taken, not all.
	HalfApplied int64 `json:"half_applied"`
	// Oversold counts rows below zero and groups with more taken than held.
	Oversold int64 `json:"oversold"`
	// Corrupt counts groups and rows whose counts match no prefix of their
	// ops (lost out of order, or not by the allocation rule), and replies
	// that disagreed with the ops before them.
	Corrupt int64 `json:"corrupt"`
	// RowsMissing counts loaded rows the restarted server did not have.
	RowsMissing int64 `json:"rows_missing"`
	// KilledEarly counts rounds whose workers had sent every op before the
	// kill came: that kill was not under load.
	KilledEarly int `json:"killed_early,omitempty"`
	// Seconds is the audit's wall time.
	Seconds float64 `json:"seconds"`
	// Error says why the audit stopped early, if it did.
	Error string `json:"error,omitempty"`
	// Examples are the first few findings, for a reader to look at.
	Examples []string `json:"examples,omitempty"`
	// Cleanup says what the audit could not remove after it, and where.
	// It changes neither the verdict nor Failed: the counts stand, and it
	// concerns disk, not the next audit, which starts afresh.
	Cleanup string `json:"cleanup,omitempty"`
}

// MarshalJSON writes the counts with the verdict and whether the audit
// failed, decided as the table decides them: a reader of the JSON that
// recomputed them from the counts would have to know each mode's promise
// (a lost acknowledged op fails write, not none).
func (r Result) MarshalJSON() ([]byte, error) {
	type counts Result // without this method
	return json.Marshal(struct {
		*counts
		Verdict string `json:"verdict"`
		Failed  bool   `json:"failed"`
	}{(*counts)(&r), r.Verdict(), r.Failed()})
}

// examplesMax bounds Result.Examples.
const examplesMax = 8

func (r *Result) example(format string, a ...any) {
	if len(r.Examples) < examplesMax {
		r.Examples = append(r.Examples, fmt.Sprintf(format, a...))
	}
}

// NeverFine counts findings no durability mode allows.
func (r *Result) NeverFine() int64 { return r.HalfApplied + r.Oversold + r.Corrupt }

// Failed reports whether the audit found what the mode must never do: a
// half-applied capture, oversell, corruption in any mode, or an
// acknowledged op or a loaded row lost under fsync or write (both promise
// to survive a process crash, and a SIGKILL is one; Load is a write the
// store acknowledged too); or whether it could not run, or ran without
// power (NotUnderLoad).
func (r *Result) Failed() bool {
	return r.Error != "" || r.NeverFine() > 0 || r.NotUnderLoad() || r.BrokePromise()
}

// BrokePromise reports whether the store lost what its mode promises to
// keep across a process crash: acknowledged ops or loaded rows, in any
// mode but none.
func (r *Result) BrokePromise() bool {
	return r.Durability != string(store.DurabilityNone) && (r.LostAcked > 0 || r.RowsMissing > 0)
}

// NotUnderLoad reports whether every round's kill came after the workers
// had sent all their ops: the server was crashed idle, so the audit never
// saw what a kill under load does, and a clean result proves little.
func (r *Result) NotUnderLoad() bool { return r.Kills > 0 && r.KilledEarly == r.Kills }

// Run runs the audit: Kills rounds, each loading fresh rows, sending ops
// with Workers sessions, killing the server at a random moment, starting
// it again and reading every row back. The server must be running when Run
// is called; it is running when Run returns, unless a restart failed.
func Run(ctx context.Context, cfg Config) *Result {
	res := &Result{Store: cfg.Store, Durability: string(cfg.Durability)}
	if err := cfg.Validate(); err != nil {
		res.Error = err.Error()
		return res
	}
	start := time.Now()
	defer func() { res.Seconds = time.Since(start).Seconds() }()
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x6b696c6c))
	for round := 0; round < cfg.Kills; round++ {
		if err := ctx.Err(); err != nil {
			res.Error = err.Error()
			return res
		}
		delay := cfg.KillAfterMin
		if span := cfg.KillAfterMax - cfg.KillAfterMin; span > 0 {
			delay += time.Duration(rng.Int64N(int64(span)))
		}
		plan := newRoundPlan(cfg.RunID, round, cfg.Workers, cfg.OpsMax, rng.Uint64())
		if err := runRound(ctx, &cfg, plan, delay, res); err != nil {
			res.Error = fmt.Sprintf("round %d: %v", round+1, err)
			return res
		}
		res.Kills++
	}
	return res
}

// runRound loads plan's rows, runs its workers, kills the server after
// delay, starts it again and judges what it kept.
func runRound(ctx context.Context, cfg *Config, plan *roundPlan, delay time.Duration, res *Result) error {
	st, err := openRetrying(ctx, cfg)
	if err != nil {
		return fmt.Errorf("opening the store: %w", err)
	}
	closed := false
	defer func() {
		if !closed {
			st.Close()
		}
	}()
	if err := st.Load(ctx, plan.rows()); err != nil {
		return fmt.Errorf("loading %d rows: %w", len(plan.rows()), err)
	}
	sessions := make([]store.Session, len(plan.workers))
	for i := range sessions {
		if sessions[i], err = st.Session(ctx); err != nil {
			for _, s := range sessions[:i] {
				s.Close()
			}
			return fmt.Errorf("opening session %d: %w", i, err)
		}
	}

	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var stop atomic.Bool
	var wg sync.WaitGroup
	var finished atomic.Int64
	for i, w := range plan.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if w.run(wctx, sessions[i], &stop) {
				finished.Add(1)
			}
		}()
	}
	timer := time.NewTimer(delay)
	select {
	case <-timer.C:
	case <-ctx.Done():
		timer.Stop()
		stop.Store(true)
		cancel()
		wg.Wait()
		return ctx.Err()
	}
	killErr := cfg.Server.Kill(ctx)
	stop.Store(true)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(stopWait):
		cancel() // a session that did not notice the kill
		<-done
	}
	for _, s := range sessions {
		s.Close()
	}
	if killErr != nil {
		return fmt.Errorf("killing the server: %w", killErr)
	}
	if int(finished.Load()) == len(plan.workers) {
		res.KilledEarly++
	}
	if err := cfg.Server.Start(ctx); err != nil {
		return fmt.Errorf("starting the server again after the kill: %w", err)
	}
	rows, err := readBack(ctx, cfg, st)
	st.Close()
	closed = true
	if err != nil {
		return fmt.Errorf("reading the rows back after the restart: %w", err)
	}
	before := *res
	plan.judge(rows, res)
	fmt.Fprintf(cfg.Log, "kill audit: %s %s round %d: killed after %v; %d ops acknowledged, %d in flight; lost %d acknowledged, %d applied unacknowledged, %d half-applied, %d oversold, %d corrupt, %d rows missing\n",
		cfg.Store, cfg.Durability, res.Kills+1, delay.Round(time.Millisecond),
		res.Acked-before.Acked, res.InFlight-before.InFlight, res.LostAcked-before.LostAcked,
		res.AppliedUnacked-before.AppliedUnacked, res.HalfApplied-before.HalfApplied,
		res.Oversold-before.Oversold, res.Corrupt-before.Corrupt, res.RowsMissing-before.RowsMissing)
	return nil
}

// openRetrying opens the store, trying again while a server that answers
// is not yet ready for clients (Redis loading its append-only file).
func openRetrying(ctx context.Context, cfg *Config) (store.Store, error) {
	deadline := time.Now().Add(cfg.ReadTimeout)
	for {
		st, err := cfg.Open(ctx)
		if err == nil || ctx.Err() != nil || time.Now().After(deadline) {
			return st, err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// readBack reads every row from the restarted server: through the round's
// store (its clients reconnect), retried while the server finishes its
// recovery, else through a store opened afresh.
func readBack(ctx context.Context, cfg *Config, st store.Store) ([]inventory.Row, error) {
	deadline := time.Now().Add(cfg.ReadTimeout)
	var lastErr error
	for attempt := 0; time.Now().Before(deadline); attempt++ {
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		rows, err := st.Rows(rctx)
		cancel()
		if err == nil {
			return rows, nil
		}
		lastErr = err
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if attempt >= 4 {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	// A client that does not reconnect (Tarantool's connector): a new one,
	// after the round's store once more (a new allot store reads back only
	// the rows it loaded, and refuses: store/remote.ErrNotLoaded).
	for time.Now().Before(deadline) {
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		rows, err := st.Rows(rctx)
		cancel()
		if err == nil {
			return rows, nil
		}
		fresh, err := cfg.Open(ctx)
		if err == nil {
			var rows []inventory.Row
			rows, err = fresh.Rows(ctx)
			fresh.Close()
			if err == nil {
				return rows, nil
			}
		}
		lastErr = err
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		time.Sleep(500 * time.Millisecond)
	}
	if lastErr == nil {
		// No read was tried: no rows is not what the server holds.
		lastErr = fmt.Errorf("kill: no read tried within %v", cfg.ReadTimeout)
	}
	return nil, lastErr
}
