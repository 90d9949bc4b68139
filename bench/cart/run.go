package cart

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"allot/bench"
	"allot/store"
)

// Mode says which capability a run drives.
type Mode uint8

const (
	// ModeCheckout: hold, then confirm, cancel or abandon (store.Checkouter).
	ModeCheckout Mode = iota
	// ModeOrder: one all-or-nothing order per cart (store.Orderer).
	ModeOrder
)

func (m Mode) String() string {
	if m == ModeOrder {
		return "order"
	}
	return "checkout"
}

// Options are the runner's own settings.
type Options struct {
	// TTL of every hold (checkout).
	TTL time.Duration
	// ExpiryWait bounds how long after its deadline an abandoned hold may
	// still be held before the checker calls it stuck.
	ExpiryWait time.Duration
	// Poll is the pause between two looks at holds past their deadline.
	Poll time.Duration
	// CallRetries bounds how often a call whose outcome is unknown (an
	// error) is repeated with the same key before the cart is recorded as
	// unknown.
	CallRetries int
	// Sweep is handed to a store.CheckoutPreparer.
	Sweep store.CheckoutConfig
	// EmptyBranches (order) runs a store.EmptyBrancher with branches that
	// do nothing: every order must then succeed with no lines and leave
	// every row as it was.
	EmptyBranches bool
}

// Defaults of Options.
const (
	TTLDefault         = time.Second
	ExpiryWaitDefault  = 30 * time.Second
	PollDefault        = time.Millisecond
	CallRetriesDefault = 3
	// lagSamplesPending bounds the abandoned holds watched at once for
	// expiry lag; holds beyond it are still checked at the end, only not
	// timed (Extra reports how many were timed).
	lagSamplesPending = 256
	// lagSpacingMS is the least time between the deadlines of two holds
	// timed for expiry lag. The watcher looks at due holds one call at a
	// time, so holds due together are seen one round trip after another:
	// with 256 of them due within a millisecond (a pipelined run abandons
	// thousands of carts a second) the last was seen hundreds of
	// milliseconds late, and the figure measured the watcher's queue, not
	// the store (allot's engine, by its own clock, expired them all within
	// 20 ms while the watcher reported a p99 of 950 ms). Spaced, at most
	// one timed hold comes due at a time.
	lagSpacingMS = 5
)

func (o *Options) fill() {
	if o.TTL == 0 {
		o.TTL = TTLDefault
	}
	if o.ExpiryWait == 0 {
		o.ExpiryWait = ExpiryWaitDefault
	}
	if o.Poll == 0 {
		o.Poll = PollDefault
	}
	if o.CallRetries == 0 {
		o.CallRetries = CallRetriesDefault
	}
}

// outcome is what one cart got.
type outcome struct {
	done bool
	// unknown: every try of the hold (or order) returned an error.
	unknown bool
	code    store.CheckoutCode
	lines   []store.HoldLine
	short   int
	// available is what an INSUFFICIENT reply says the short group held.
	available int64
	// expiresAt is the hold's deadline (ms, the store's clock).
	expiresAt int64
	// finish is the confirm or cancel reply; finishUnknown when every try
	// returned an error.
	finish        store.CheckoutCode
	finishUnknown bool
	// finalState is the hold's state read back after the run.
	finalState store.HoldState
	// resend: the repeat was sent; resendDiff says how its reply differed
	// from the first one ("" when it was the same).
	resend     bool
	resendDiff string
}

// run is one run of a workload on one store.
type run struct {
	mode  Mode
	w     *Workload
	opt   Options
	cfg   bench.KindConfig
	nonce string

	sessions []store.Session
	outs     []outcome
	next     atomic.Int64
	doneN    atomic.Int64
	stop     atomic.Bool
	start    time.Time
	elapsed  time.Duration

	errMu        sync.Mutex
	errors       int64
	errorSamples []string

	latency []*hdrhistogram.Histogram
	latMax  []int64
	// conflictStart is each session's store.Retrier count when the run
	// began; conflicts is what the sessions retried while the carts ran.
	conflictStart []int64
	conflicts     int64
	// pipe counts each worker's rounds when pipelined (pipeline.go).
	pipe []pipeStats

	lag lagWatch
}

// ID returns cart i's hold id (checkout) or idempotency key (order). The
// nonce keeps ids of two runs on one store apart.
func (r *run) ID(i int) string {
	p := "h-"
	if r.mode == ModeOrder {
		p = "o-"
	}
	return p + r.nonce + "-" + strconv.Itoa(i)
}

func (r *run) failf(format string, args ...any) {
	r.errMu.Lock()
	r.errors++
	if len(r.errorSamples) < 10 {
		r.errorSamples = append(r.errorSamples, fmt.Sprintf(format, args...))
	}
	r.errMu.Unlock()
}

// Run loads w into st, drives it as mode and cfg say, checks the outcome
// and returns the result.
func Run(ctx context.Context, mode Mode, w *Workload, opt Options, cfg bench.KindConfig, st store.Store) (*bench.Result, error) {
	opt.fill()
	if err := opt.Sweep.Validate(); err != nil {
		return nil, err
	}
	r := &run{mode: mode, w: w, opt: opt, cfg: cfg, nonce: strconv.FormatInt(time.Now().UnixNano(), 36)}
	res := &bench.Result{
		Store: cfg.Store, Workers: cfg.Workers, Durability: string(cfg.Durability), Pipeline: cfg.Pipeline,
		Mode: "closed", Started: time.Now().UTC(), Sweep: cfg.Sweep,
		Workload: bench.WorkloadInfo{Name: mode.String() + "/" + w.Params.Preset, Rows: len(w.Rows), Ops: len(w.Carts), Seed: w.Params.Seed},
		Extra:    map[string]any{},
	}
	if cfg.Rate > 0 {
		return nil, fmt.Errorf("cart: the %s workload runs closed loop only; drop --rate", mode)
	}
	if mode == ModeOrder && cfg.Pipeline > 1 {
		return nil, fmt.Errorf("cart: the order workload sends one order at a time; --pipeline %d applies to the checkout workload only", cfg.Pipeline)
	}
	if err := st.Load(ctx, w.Rows); err != nil {
		return nil, fmt.Errorf("cart: load: %w", err)
	}
	if opt.EmptyBranches {
		eb, ok := st.(store.EmptyBrancher)
		if !ok || mode != ModeOrder {
			return nil, fmt.Errorf("%w: --branches empty needs the order workload on a store whose orders run over branch services (dtm)", bench.ErrUnsupported)
		}
		eb.SetEmptyBranches(true)
		defer eb.SetEmptyBranches(false)
		res.Extra["branches"] = "empty"
	}
	// Described once the store is set up as it runs: the description is
	// what the report shows of a store's settings (empty branches
	// included).
	if d, ok := st.(store.Describer); ok {
		if s, err := d.Describe(ctx); err == nil {
			res.Description = s
		}
	}
	var stopSweeper func() error
	if p, ok := st.(store.CheckoutPreparer); ok {
		stop, err := p.PrepareCheckout(ctx, opt.Sweep)
		if err != nil {
			return nil, fmt.Errorf("cart: preparing checkout: %w", err)
		}
		// Stopped after the check (which waits for the abandoned holds
		// to expire), its first failed pass a violation of the run's
		// check; on an early return, stopped all the same.
		stopped := false
		stopSweeper = func() error {
			if stopped {
				return nil
			}
			stopped = true
			return stop()
		}
		defer stopSweeper()
		res.Extra["sweep_interval_ms"] = float64(opt.Sweep.SweepInterval) / 1e6
		res.Extra["sweep_batch"] = opt.Sweep.SweepBatch
	}
	// One more session than workers: the expiry watcher's.
	for range cfg.Workers + 1 {
		se, err := st.Session(ctx)
		if err != nil {
			r.closeSessions()
			return nil, fmt.Errorf("cart: opening a session: %w", err)
		}
		r.sessions = append(r.sessions, se)
	}
	defer r.closeSessions()
	for k, se := range r.sessions {
		var ok bool
		if mode == ModeOrder {
			_, ok = se.(store.Orderer)
		} else {
			_, ok = se.(store.Checkouter)
		}
		if !ok {
			return nil, fmt.Errorf("%w: %s sessions do not implement store.%s", bench.ErrUnsupported, cfg.Store, map[Mode]string{ModeCheckout: "Checkouter", ModeOrder: "Orderer"}[mode])
		}
		if r.pipelined() && k < cfg.Workers {
			if _, ok := se.(store.CheckoutPipeliner); !ok {
				// Running it one cart at a time instead would be a
				// silent change of what is measured.
				return nil, fmt.Errorf("%w: store %s cannot keep checkout calls in flight (--pipeline %d): its sessions do not implement store.CheckoutPipeliner; run it with --pipeline 1", bench.ErrUnsupported, cfg.Store, cfg.Pipeline)
			}
		}
	}
	r.conflictStart = make([]int64, len(r.sessions))
	for k, se := range r.sessions {
		if rt, ok := se.(store.Retrier); ok {
			r.conflictStart[k] = rt.ConflictRetries()
		}
	}
	r.outs = make([]outcome, len(w.Carts))
	if err := r.drive(ctx); err != nil {
		return nil, err
	}
	c := r.check(ctx, st)
	if stopSweeper != nil {
		if err := stopSweeper(); err != nil {
			// Not an op that failed: the store's expiry did (holds left
			// held past their deadlines follow from it).
			c.v.addf("the store's expiry sweeper failed: %v", err)
		}
	}
	r.fill(res, c)
	return res, nil
}

// pipelined reports whether the run keeps many carts in flight per
// worker (checkout with --pipeline > 1).
func (r *run) pipelined() bool { return r.mode == ModeCheckout && r.cfg.Pipeline > 1 }

func (r *run) closeSessions() {
	for _, se := range r.sessions {
		se.Close()
	}
	r.sessions = nil
}

// drive runs the carts with cfg.Workers workers, closed loop.
func (r *run) drive(ctx context.Context) error {
	workers := r.cfg.Workers
	r.latency = make([]*hdrhistogram.Histogram, workers)
	r.latMax = make([]int64, workers)
	r.pipe = make([]pipeStats, workers)
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	r.lag.init(r.opt)
	var watchDone chan struct{}
	if r.mode == ModeCheckout {
		watchDone = make(chan struct{})
		go func() {
			defer close(watchDone)
			r.lag.watch(watchCtx, r.sessions[workers].(store.Checkouter))
		}()
	}
	progressDone := make(chan struct{})
	go r.progress(progressDone)
	r.start = time.Now()
	var wg sync.WaitGroup
	for k := range workers {
		r.latency[k] = hdrhistogram.New(1, int64(time.Hour), 3)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r.pipelined() {
				r.workPipelined(ctx, k)
			} else {
				r.work(ctx, k)
			}
		}()
	}
	wg.Wait()
	r.elapsed = time.Since(r.start)
	close(progressDone)
	if watchDone != nil {
		r.lag.finish()
		<-watchDone
	}
	for k, se := range r.sessions {
		if rt, ok := se.(store.Retrier); ok {
			r.conflicts += rt.ConflictRetries() - r.conflictStart[k]
		}
	}
	return ctx.Err()
}

func (r *run) progress(done chan struct{}) {
	if r.cfg.Progress == nil {
		<-done
		return
	}
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	last, lastAt := int64(0), time.Now()
	for {
		select {
		case <-done:
			n := r.doneN.Load()
			r.cfg.Progress(bench.Progress{Store: r.cfg.Store, Done: n, Total: int64(len(r.w.Carts)), Elapsed: r.elapsed, OpsPerSec: float64(n) / r.elapsed.Seconds(), Final: true})
			return
		case now := <-t.C:
			n := r.doneN.Load()
			r.cfg.Progress(bench.Progress{Store: r.cfg.Store, Done: n, Total: int64(len(r.w.Carts)), Elapsed: now.Sub(r.start), OpsPerSec: float64(n-last) / now.Sub(lastAt).Seconds()})
			last, lastAt = n, now
		}
	}
}

func (r *run) take() int {
	if r.stop.Load() {
		return -1
	}
	if d := r.cfg.Duration; d > 0 && time.Since(r.start) > d {
		r.stop.Store(true)
		return -1
	}
	i := r.next.Add(1) - 1
	if i >= int64(len(r.w.Carts)) {
		return -1
	}
	return int(i)
}

func (r *run) work(ctx context.Context, k int) {
	se := r.sessions[k]
	var res, again store.HoldResult
	for i := r.take(); i >= 0; i = r.take() {
		if ctx.Err() != nil {
			return
		}
		t0 := time.Now()
		if r.mode == ModeOrder {
			r.order(ctx, se.(store.Orderer), i, &res, &again)
		} else {
			r.checkout(ctx, se.(store.Checkouter), i, &res, &again)
		}
		d := int64(time.Since(t0))
		r.latMax[k] = max(r.latMax[k], d)
		r.latency[k].RecordValue(min(max(d, 1), int64(time.Hour)))
		r.outs[i].done = true
		r.doneN.Add(1)
	}
}

// order runs cart i as one order.
func (r *run) order(ctx context.Context, o store.Orderer, i int, res, again *store.HoldResult) {
	c, out, key := &r.w.Carts[i], &r.outs[i], r.ID(i)
	call := func(dst *store.HoldResult) bool {
		for try := 0; try <= r.opt.CallRetries; try++ {
			err := o.Order(ctx, key, c.Lines, dst)
			if err == nil {
				return true
			}
			r.failf("order %s: %v", key, err)
			if ctx.Err() != nil {
				break
			}
		}
		return false
	}
	if !call(res) {
		out.unknown = true
		return
	}
	r.record(out, res)
	if c.ResendHold {
		out.resend = true
		if call(again) {
			out.resendDiff = diff(res, again, false)
		} else {
			out.resendDiff = "the repeat's outcome is unknown"
		}
	}
}

// checkout runs cart i: hold, then its fate.
func (r *run) checkout(ctx context.Context, co store.Checkouter, i int, res, again *store.HoldResult) {
	c, out, id := &r.w.Carts[i], &r.outs[i], r.ID(i)
	hold := func(dst *store.HoldResult) bool {
		for try := 0; try <= r.opt.CallRetries; try++ {
			err := co.Hold(ctx, id, r.opt.TTL, c.Lines, dst)
			if err == nil {
				return true
			}
			r.failf("hold %s: %v", id, err)
			if ctx.Err() != nil {
				break
			}
		}
		return false
	}
	if !hold(res) {
		// It may exist: it must then expire. The checker looks.
		out.unknown = true
		return
	}
	r.record(out, res)
	if res.Code != store.CheckoutOK {
		return
	}
	// A repeat of an insufficient hold is not sent: whether a refused hold
	// id stays bound is not the contract's to say, and a retry that finds
	// stock again would be a new hold.
	if c.ResendHold {
		out.resend = true
		if hold(again) {
			out.resendDiff = diff(res, again, true)
		} else {
			out.resendDiff = "the repeat's outcome is unknown"
		}
	}
	if c.Fate == FateAbandon {
		r.lag.add(id, res.ExpiresAtMS)
		return
	}
	finish := func() (store.CheckoutCode, bool) {
		for try := 0; try <= r.opt.CallRetries; try++ {
			var code store.CheckoutCode
			var err error
			if c.Fate == FateConfirm {
				code, err = co.Confirm(ctx, id)
			} else {
				code, err = co.Cancel(ctx, id)
			}
			if err == nil {
				return code, true
			}
			r.failf("%s %s: %v", c.Fate, id, err)
			if ctx.Err() != nil {
				break
			}
		}
		return 0, false
	}
	code, ok := finish()
	if !ok {
		out.finishUnknown = true
		return
	}
	out.finish = code
	if c.ResendFinish {
		code2, ok := finish()
		switch {
		case !ok:
			out.resendDiff = "the repeated " + c.Fate.String() + "'s outcome is unknown"
		case code2 != code:
			out.resendDiff = fmt.Sprintf("%s answered %s, its repeat %s", c.Fate, code, code2)
		}
		out.resend = true
	}
}

func (r *run) record(out *outcome, res *store.HoldResult) {
	out.code = res.Code
	out.short = res.Short
	out.available = res.Available
	out.expiresAt = res.ExpiresAtMS
	if res.Code == store.CheckoutOK {
		out.lines = slices.Clone(res.Lines)
	}
	if res.Code == store.CheckoutInvalid {
		r.failf("store refused a generated cart as invalid: %s", res.Detail)
	}
}

// diff says how a repeat's reply differs from the first, "" if it does
// not.
func diff(first, repeat *store.HoldResult, hold bool) string {
	if first.Code != repeat.Code {
		return fmt.Sprintf("first reply %s, repeat %s", first.Code, repeat.Code)
	}
	if hold && first.ExpiresAtMS != repeat.ExpiresAtMS {
		return fmt.Sprintf("first deadline %d, repeat %d", first.ExpiresAtMS, repeat.ExpiresAtMS)
	}
	if first.Code == store.CheckoutInsufficient && (first.Short != repeat.Short || first.Available != repeat.Available) {
		return fmt.Sprintf("first insufficient at line %d with %d, repeat at line %d with %d", first.Short+1, first.Available, repeat.Short+1, repeat.Available)
	}
	if !slices.Equal(first.Lines, repeat.Lines) {
		return fmt.Sprintf("first lines %v, repeat %v", first.Lines, repeat.Lines)
	}
	return ""
}

// lagWatch times abandoned holds from their deadline to the first look
// that finds them expired (the reply's arrival: the figure is high by up
// to one round trip). It watches at most lagSamplesPending at once, whose
// deadlines are at least lagSpacingMS apart; the holds it does not take
// are only checked at the end.
type lagWatch struct {
	opt     Options
	mu      sync.Mutex
	queue   []pendingHold
	last    int64 // the deadline of the last hold taken, in ms
	closed  bool
	skipped int64
	lagsMS  []float64
	stuck   []string
	timed   int64
}

type pendingHold struct {
	id        string
	expiresAt int64
}

func (l *lagWatch) init(opt Options) { l.opt = opt }

func (l *lagWatch) add(id string, expiresAt int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.queue) >= lagSamplesPending || expiresAt < l.last+lagSpacingMS {
		l.skipped++
		return
	}
	l.last = expiresAt
	l.queue = append(l.queue, pendingHold{id, expiresAt})
}

// finish says no more holds come; watch returns once the queue is empty.
func (l *lagWatch) finish() {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
}

func nowMS() float64 { return float64(time.Now().UnixNano()) / 1e6 }

// watch looks, every Poll, at each queued hold past its deadline.
func (l *lagWatch) watch(ctx context.Context, co store.Checkouter) {
	var info store.HoldInfo
	var due []pendingHold
	for ctx.Err() == nil {
		l.mu.Lock()
		now := nowMS()
		due = due[:0]
		for _, p := range l.queue {
			if float64(p.expiresAt) <= now {
				due = append(due, p)
			}
		}
		closed, empty := l.closed, len(l.queue) == 0
		l.mu.Unlock()
		if closed && empty {
			return
		}
		var gone []string
		for _, p := range due {
			found, err := co.HoldGet(ctx, p.id, &info)
			seen := nowMS()
			switch {
			case err != nil:
				// Looked at again next round.
			case !found:
				gone = append(gone, p.id)
				l.mu.Lock()
				l.stuck = append(l.stuck, fmt.Sprintf("hold %s is unknown to the store after its deadline", p.id))
				l.mu.Unlock()
			case info.State == store.HoldExpired:
				gone = append(gone, p.id)
				l.mu.Lock()
				l.lagsMS = append(l.lagsMS, max(seen-float64(p.expiresAt), 0))
				l.timed++
				l.mu.Unlock()
			case info.State != store.HoldHeld:
				gone = append(gone, p.id)
				l.mu.Lock()
				l.stuck = append(l.stuck, fmt.Sprintf("abandoned hold %s ended %s, not expired", p.id, info.State))
				l.mu.Unlock()
			case seen-float64(p.expiresAt) > float64(l.opt.ExpiryWait/time.Millisecond):
				gone = append(gone, p.id)
				l.mu.Lock()
				l.stuck = append(l.stuck, fmt.Sprintf("hold %s still held %.0f ms after its deadline", p.id, seen-float64(p.expiresAt)))
				l.mu.Unlock()
			}
		}
		if len(gone) > 0 {
			l.mu.Lock()
			l.queue = slices.DeleteFunc(l.queue, func(p pendingHold) bool { return slices.Contains(gone, p.id) })
			l.mu.Unlock()
		}
		select {
		case <-ctx.Done():
		case <-time.After(l.opt.Poll):
		}
	}
}
