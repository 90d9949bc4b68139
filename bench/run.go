package bench

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"allot/internal/hrsleep"
	"allot/inventory"
	"allot/store"
	"allot/workload"
)

// errorSamplesMax caps the error messages a Result keeps.
const errorSamplesMax = 5

// ThroughputSecondsMax bounds a result's per-second counts
// (Result.Throughput): an hour. Later seconds fold into the last count,
// so that the counts still sum to the run's ops. Unbounded, they grew by
// a count a second for as long as a run lasted (and by one per worker
// where each worker counts its own), in memory, in the JSON and in the
// bench service's history. rw's meter and the bench service keep the
// same bound, so the CLI's JSON and the service's agree.
const ThroughputSecondsMax = 3600

// SecondCounts counts the ops completed in each second of a run, at most
// ThroughputSecondsMax seconds of them: ops of a later second count in
// the last one. The zero value is empty; one goroutine uses it. It grows
// only as far as the latest second counted, so a short run keeps a short
// series (and a worker that counts its own keeps what it saw).
type SecondCounts struct {
	counts []int64
}

// Add counts n ops completed in second s of the run (0 is the first).
func (c *SecondCounts) Add(s int, n int64) {
	s = min(s, ThroughputSecondsMax-1)
	for len(c.counts) <= s {
		c.counts = append(c.counts, 0)
	}
	c.counts[s] += n
}

// Merge adds o's counts to c, second by second.
func (c *SecondCounts) Merge(o *SecondCounts) {
	for s, n := range o.counts {
		c.Add(s, n)
	}
}

// Counts returns the counts, second by second; the caller may keep them.
func (c *SecondCounts) Counts() []int64 { return c.counts }

// Run loads w into st, replays its ops as cfg says, reads the rows back and
// checks them. It is NewPlan followed by Plan.Run.
func Run(ctx context.Context, cfg RunConfig, st store.Store, w *workload.Workload) (*Result, error) {
	p, err := NewPlan(w)
	if err != nil {
		return nil, err
	}
	return p.Run(ctx, cfg, st)
}

// Run loads the plan's workload into st, replays its ops, reads the rows
// back and checks them.
//
// What is timed: Result.Seconds runs from the moment the workers are
// released (sessions already open, rows already loaded) to the moment the
// last one finishes; loading, opening sessions, reading back and checking
// are outside it. In closed loop each store call (Session.Capture or
// Session.Release) is timed on its own, from just before the call to just
// after it returns: a capture retried for stock gives one sample per call,
// and the retry sleeps are in no sample. In open loop each op is timed
// from its intended start (response time) and from its actual send
// (service time) to the return of its last call, sleeps included.
//
// The error is for a run that could not happen (loading failed, a session
// could not open, ctx was cancelled, the rows could not be read back); a
// run whose ops failed or whose check failed returns a Result saying so.
func (p *Plan) Run(ctx context.Context, cfg RunConfig, st store.Store) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	w := p.w
	if span := float64(len(w.Ops)) / cfg.Rate; cfg.OpenLoop() && span > scheduleSpanMax.Seconds() {
		// The intended starts are nanoseconds in an int64: past its range
		// they wrapped, and every op went out at once.
		return nil, fmt.Errorf("bench: %d ops at %g ops/s span %.3g s, past the %v an open-loop schedule can time", len(w.Ops), cfg.Rate, span, scheduleSpanMax)
	}
	res := &Result{
		Store:      cfg.Store,
		Workload:   WorkloadInfo{Name: w.Params.Name, Rows: len(w.Initial), Ops: len(w.Ops), Seed: w.Params.Seed, SKUs: w.Params.SKUs, File: cfg.WorkloadFile},
		Workers:    cfg.Workers,
		Durability: string(cfg.Durability),
		Pipeline:   cfg.Pipeline,
		Mode:       "closed",
		Sweep:      cfg.Sweep,
		Started:    time.Now().UTC(),
	}
	if cfg.OpenLoop() {
		res.Mode = "open"
	}
	if d, ok := st.(store.Describer); ok {
		if desc, err := d.Describe(ctx); err == nil {
			res.Description = desc
		}
	}
	if o, ok := st.(store.OrdersOnly); ok {
		return nil, fmt.Errorf("%w: %s", ErrUnsupported, o.OrdersOnly())
	}
	if err := st.Load(ctx, w.Initial); err != nil {
		return nil, fmt.Errorf("bench: loading %d rows: %w", len(w.Initial), err)
	}

	r := newRunner(p, &cfg)
	defer r.closeSessions()
	if err := r.openSessions(ctx, st); err != nil {
		return nil, err
	}
	meter := StartServerMeter(ctx, st)
	err := r.run(ctx)
	usage := meter.Stop(r.done(), SpanOps)
	if err != nil {
		return nil, err
	}
	res.Server = usage
	final, err := st.Rows(ctx)
	if err != nil {
		return nil, fmt.Errorf("bench: reading the rows back: %w", err)
	}
	if err := r.fill(res); err != nil {
		return nil, err
	}
	res.Check = Check(r.outcomes, final)
	res.Status = StatusOK
	if !res.Check.OK {
		res.Status = StatusCheckFailed
	}
	return res, nil
}

// paddedCounter sits alone on its cache line, so that workers bumping
// their own counters do not slow each other down.
type paddedCounter struct {
	n atomic.Int64
	_ [56]byte
}

// runner is one run's shared state.
type runner struct {
	plan     *Plan
	cfg      *RunConfig
	outcomes *Outcomes
	workers  []*worker

	next atomic.Int64 // index of the next op to issue
	stop atomic.Bool  // set when a duration bound or a cancel ends the run

	start    time.Time
	elapsed  time.Duration
	offsets  []int64 // open loop, Poisson: each op's intended start after start, ns
	interval float64 // open loop, constant: ns between intended starts

	throughput SecondCounts
	seconds    int // the one-second ticks so far
	// secondTicks, when set, stands in for the one-second ticker that
	// samples throughput: a test drives an hour-long run with it.
	secondTicks <-chan time.Time

	errMu        sync.Mutex
	errorSamples []string
	errorCount   atomic.Int64 // for Progress; each worker's own count is in worker.errors
}

// worker is one session's state; only its goroutine touches it while ops
// run.
type worker struct {
	r       *runner
	se      store.Session
	lines   []inventory.Line
	latency latencyRecorder // closed: per call; open: response time
	service latencyRecorder // open only
	coarse  *coarseHistogram
	done    paddedCounter

	retries       int64
	errors        int64
	late          int64
	latenessMax   time.Duration
	conflictStart int64

	pipe store.Pipeliner // with RunConfig.Pipeline > 1
}

// scheduleSpanMax bounds an open-loop run's schedule (the last op's
// intended start), well inside an int64 of nanoseconds.
const scheduleSpanMax = 100 * 365 * 24 * time.Hour

func newRunner(p *Plan, cfg *RunConfig) *runner {
	r := &runner{plan: p, cfg: cfg, outcomes: NewOutcomes(p)}
	if cfg.Pipeline <= 1 {
		// Each worker takes the next op index only once its last op is
		// done, so when an op is taken, of the ops before it only those
		// the other workers hold can still be in flight. A pipelined
		// worker holds a batch and every capture waiting for its retry:
		// no bound.
		r.outcomes.othersInFlightMax = cfg.Workers - 1
	}
	for range cfg.Workers {
		wk := &worker{r: r, lines: make([]inventory.Line, 0, 8), latency: newLatencyRecorder()}
		if cfg.OpenLoop() {
			wk.service = newLatencyRecorder()
		}
		if cfg.Progress != nil {
			wk.coarse = new(coarseHistogram)
		}
		r.workers = append(r.workers, wk)
	}
	if cfg.OpenLoop() {
		r.interval = 1e9 / cfg.Rate
		if cfg.Arrival == ArrivalPoisson {
			r.offsets = poissonOffsets(len(p.w.Ops), cfg.Rate, cfg.ArrivalSeed)
		}
	}
	return r
}

// poissonOffsets draws the intended starts of n ops arriving as a Poisson
// process of the given rate: exponential gaps, from a seeded PCG so that a
// run's schedule replays.
func poissonOffsets(n int, rate float64, seed uint64) []int64 {
	src := rand.New(rand.NewPCG(seed, 0x6172726976616c73)) // "arrivals"
	out := make([]int64, n)
	var t float64
	for i := range out {
		out[i] = int64(t)
		t += src.ExpFloat64() / rate * 1e9
	}
	return out
}

func (r *runner) openSessions(ctx context.Context, st store.Store) error {
	for i, wk := range r.workers {
		se, err := st.Session(ctx)
		if err != nil {
			return fmt.Errorf("bench: opening session %d of %d: %w", i+1, len(r.workers), err)
		}
		wk.se = se
		if rt, ok := se.(store.Retrier); ok {
			wk.conflictStart = rt.ConflictRetries()
		}
		if r.cfg.Pipeline > 1 {
			p, ok := se.(store.Pipeliner)
			if !ok {
				// Running it one op at a time instead would be a silent
				// change of what is measured.
				return fmt.Errorf("bench: store %s cannot keep ops in flight (--pipeline %d): run it with --pipeline 1", r.cfg.Store, r.cfg.Pipeline)
			}
			if r.cfg.OpenLoop() {
				return fmt.Errorf("bench: --pipeline applies to the closed loop, not with --rate")
			}
			wk.pipe = p
		}
	}
	return nil
}

func (r *runner) closeSessions() {
	for _, wk := range r.workers {
		if wk.se != nil {
			wk.se.Close()
		}
	}
}

// run releases the workers and waits for them, sampling throughput each
// second and reporting progress.
func (r *runner) run(ctx context.Context) error {
	ready := make(chan struct{})
	var wg sync.WaitGroup
	for _, wk := range r.workers {
		wg.Go(func() {
			<-ready
			if r.cfg.OpenLoop() {
				wk.runOpen(ctx)
			} else {
				wk.runClosed(ctx)
			}
		})
	}
	// The run ends when the last worker does, timed here, not when the
	// loop below sees finished (it may be taking a per-second sample).
	finished := make(chan struct{})
	var end time.Time
	go func() { wg.Wait(); end = time.Now(); close(finished) }()

	if r.cfg.Timed != nil {
		r.cfg.Timed(true)
	}
	r.start = time.Now()
	close(ready)
	// The closed loop stops at the deadline. The open loop stops issuing
	// at the first op scheduled past it (see runOpen) instead: ops due
	// before it but held up by a stalled store must still be sent and
	// timed, or the stall would vanish from the results. The deadline
	// stops the workers from its own timer (it once was a case of the
	// loop below, which a slow Progress callback then held up).
	if r.cfg.Duration > 0 && !r.cfg.OpenLoop() {
		t := time.AfterFunc(r.cfg.Duration, func() { r.stop.Store(true) })
		defer t.Stop()
	}
	second := r.secondTicks
	if second == nil {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		second = t.C
	}
	// Progress is reported from a goroutine of its own: a slow callback
	// must not hold up the per-second samples.
	stopProgress := make(chan struct{})
	progressDone := make(chan struct{})
	if r.cfg.Progress != nil {
		go r.reportProgress(stopProgress, progressDone)
	} else {
		close(progressDone)
	}
	cancelled := ctx.Done()
	var lastTotal int64
	for {
		select {
		case <-finished:
			close(stopProgress)
			<-progressDone
			if r.cfg.Timed != nil {
				r.cfg.Timed(false)
			}
			r.elapsed = end.Sub(r.start)
			total := r.done()
			if total > lastTotal || r.seconds == 0 {
				r.throughput.Add(r.seconds, total-lastTotal)
			}
			if r.cfg.Progress != nil {
				r.report(total, 0, true)
			}
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("bench: run cancelled: %w", err)
			}
			return nil
		case <-cancelled:
			r.stop.Store(true)
			cancelled = nil // closed for good: stop selecting it
		case <-second:
			total := r.done()
			r.throughput.Add(r.seconds, total-lastTotal)
			r.seconds++
			lastTotal = total
		}
	}
}

// reportProgress calls Progress about four times a second until stop is
// closed, then closes done.
func (r *runner) reportProgress(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	var lastTotal int64
	last := r.start
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			total := r.done()
			rate := float64(total-lastTotal) / now.Sub(last).Seconds()
			lastTotal, last = total, now
			r.report(total, rate, false)
		}
	}
}

func (r *runner) done() int64 {
	var n int64
	for _, wk := range r.workers {
		n += wk.done.n.Load()
	}
	return n
}

func (r *runner) report(total int64, rate float64, final bool) {
	hs := make([]*coarseHistogram, len(r.workers))
	for i, wk := range r.workers {
		hs[i] = wk.coarse
	}
	elapsed := time.Since(r.start)
	pr := Progress{
		Store: r.cfg.Store, Done: total, Total: int64(len(r.plan.w.Ops)), Elapsed: elapsed,
		OpsPerSec: rate, P99: coarseQuantile(hs, 0.99), Errors: r.errorCount.Load(), Final: final,
	}
	if final {
		pr.OpsPerSec = float64(total) / r.elapsed.Seconds()
		pr.Elapsed = r.elapsed
	} else if rate > 0 {
		pr.ETA = time.Duration(float64(pr.Total-total) / rate * 1e9)
		if d := r.cfg.Duration; d > 0 && d-elapsed < pr.ETA {
			pr.ETA = max(d-elapsed, 0)
		}
	}
	r.cfg.Progress(pr)
}

// take returns the index of the next op to issue, or -1 when there is none
// or the run is stopping.
func (r *runner) take() int {
	if r.stop.Load() {
		return -1
	}
	i := r.next.Add(1) - 1
	if i >= int64(len(r.plan.w.Ops)) {
		return -1
	}
	return int(i)
}

func (wk *worker) runClosed(ctx context.Context) {
	if wk.pipe != nil {
		wk.runPipelined(ctx)
		return
	}
	for {
		i := wk.r.take()
		if i < 0 {
			return
		}
		wk.exec(ctx, i, true)
		wk.done.n.Add(1)
	}
}

// clock returns the time since the run started, from the monotonic clock
// alone: time.Since on a time that carries a monotonic reading reads one
// clock, where time.Now reads the wall clock too. Two reads per op are a
// visible part of the harness's cost on a fast store.
func (r *runner) clock() time.Duration { return time.Since(r.start) }

// takeN returns the next up to n op indices [from, to), or from == to when
// none is left or the run is stopping.
func (r *runner) takeN(n int) (from, to int) {
	if r.stop.Load() {
		return 0, 0
	}
	end := r.next.Add(int64(n))
	total := int64(len(r.plan.w.Ops))
	if end-int64(n) >= total {
		return 0, 0
	}
	return int(end) - n, int(min(end, total))
}

// runPipelined is the closed loop with Pipeline ops in flight per worker:
// each call carries up to that many ops, and the worker waits for all of
// them before the next call. Each op's latency sample is its call's round
// trip. A capture that found too little stock is set aside and goes out
// again in the first call after RetryDelay has passed; meanwhile the worker
// fills its calls with new ops, so one reordered capture does not hold up
// the whole pipeline for RetryDelay.
func (wk *worker) runPipelined(ctx context.Context) {
	r := wk.r
	depth := r.cfg.Pipeline
	ops := make([]inventory.Op, depth)
	results := make([]inventory.Result, depth)
	batch := make([]pendingOp, 0, depth)
	var waiting []pendingOp // captures to retry, in due order
	exhausted := false
	for {
		now := r.clock()
		batch = batch[:0]
		for len(waiting) > 0 && len(batch) < depth && waiting[0].due <= now {
			batch = append(batch, waiting[0])
			waiting = waiting[1:]
		}
		if !exhausted && len(batch) < depth {
			from, to := r.takeN(depth - len(batch))
			exhausted = from == to
			for i := from; i < to; i++ {
				batch = append(batch, pendingOp{i: i})
			}
		}
		if len(batch) == 0 {
			if len(waiting) == 0 {
				return
			}
			if !wk.sleep(ctx, waiting[0].due-now) {
				for _, p := range waiting {
					wk.fail(p.i, OpRefused, fmt.Sprintf("op %d: run cancelled while retrying", p.i+1))
				}
				wk.done.n.Add(int64(len(waiting)))
				return
			}
			continue
		}
		for k, p := range batch {
			ops[k] = r.plan.w.Ops[p.i].InventoryOp()
		}
		n := len(batch)
		t0 := r.clock()
		err := wk.pipe.Pipeline(ctx, ops[:n], results[:n])
		end := r.clock()
		var finished int64
		for k, p := range batch {
			wk.latency.record(end - t0)
			if wk.coarse != nil {
				wk.coarse.record(int64(end - t0))
			}
			res := &results[k]
			switch v, status, msg := classify(p.i, &r.plan.w.Ops[p.i], res, err, p.attempts, r.cfg.RetryMax); v {
			case verdictApplied:
				r.outcomes.Record(p.i, OpApplied, res.Lines)
			case verdictRetry:
				wk.retries++
				waiting = append(waiting, pendingOp{i: p.i, attempts: p.attempts + 1, due: end + r.cfg.RetryDelay})
				continue
			default:
				wk.fail(p.i, status, msg)
			}
			finished++
		}
		wk.done.n.Add(finished)
	}
}

// pendingOp is an op of a pipelined worker: its index, how often it was
// retried, and when it may go out again.
type pendingOp struct {
	i        int
	attempts int
	due      time.Duration // on the runner's clock
}

func (wk *worker) runOpen(ctx context.Context) {
	r := wk.r
	threshold := r.cfg.LateThreshold
	// time.Sleep below a millisecond overshoots by about one on Linux (the
	// poller's timeout is in whole milliseconds), and every response time
	// would carry it: a timerfd wakes within tens of microseconds.
	sleeper := hrsleep.New()
	defer sleeper.Close()
	for {
		i := r.take()
		if i < 0 {
			return
		}
		var offset int64
		if r.offsets != nil {
			offset = r.offsets[i]
		} else {
			offset = int64(float64(i) * r.interval)
		}
		if d := r.cfg.Duration; d > 0 && offset >= int64(d) {
			r.stop.Store(true)
			return
		}
		intended := r.start.Add(time.Duration(offset))
		if sleeper.Until(ctx, intended); ctx.Err() != nil {
			return
		}
		sent := time.Now()
		if late := sent.Sub(intended); late > threshold {
			wk.late++
			wk.latenessMax = max(wk.latenessMax, late)
		}
		wk.exec(ctx, i, false)
		end := time.Now()
		wk.latency.record(end.Sub(intended))
		wk.service.record(end.Sub(sent))
		if wk.coarse != nil {
			wk.coarse.record(int64(end.Sub(intended)))
		}
		wk.done.n.Add(1)
	}
}

// exec issues op i, retrying a capture that finds too little stock, and
// records its outcome. timeCalls records each call's latency (closed loop).
func (wk *worker) exec(ctx context.Context, i int, timeCalls bool) {
	r := wk.r
	op := &r.plan.w.Ops[i]
	for attempt := 0; ; attempt++ {
		var res inventory.Result
		var err error
		t0 := r.clock()
		if op.Kind == inventory.KindCapture {
			res, err = wk.se.Capture(ctx, op.Key.Group(), op.N, wk.lines)
		} else {
			res, err = wk.se.Release(ctx, op.Key, op.N)
		}
		if timeCalls {
			d := r.clock() - t0
			wk.latency.record(d)
			if wk.coarse != nil {
				wk.coarse.record(int64(d))
			}
		}
		switch v, status, msg := classify(i, op, &res, err, attempt, r.cfg.RetryMax); v {
		case verdictApplied:
			r.outcomes.Record(i, OpApplied, res.Lines)
			if cap(res.Lines) > cap(wk.lines) {
				wk.lines = res.Lines[:0] // keep the store's larger buffer
			}
			return
		case verdictRetry:
			wk.retries++
			if !wk.sleep(ctx, r.cfg.RetryDelay) {
				wk.fail(i, OpRefused, fmt.Sprintf("op %d: capture of %d from %v: run cancelled while retrying", i+1, op.N, op.Group()))
				return
			}
		default:
			wk.fail(i, status, msg)
			return
		}
	}
}

// sleep waits d, or less if ctx is cancelled; it reports whether the run
// may go on.
func (wk *worker) sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func (wk *worker) fail(i int, status OpStatus, msg string) {
	wk.errors++
	wk.r.errorCount.Add(1)
	wk.r.outcomes.Record(i, status, nil)
	r := wk.r
	r.errMu.Lock()
	if len(r.errorSamples) < errorSamplesMax {
		if status == OpUnknown {
			op := &r.plan.w.Ops[i]
			msg = fmt.Sprintf("op %d: %v of %d: %s", i+1, op.Kind, op.N, msg)
		}
		r.errorSamples = append(r.errorSamples, msg)
	}
	r.errMu.Unlock()
}

// fill copies the measurements into res.
func (r *runner) fill(res *Result) error {
	res.Ops = r.done()
	res.Seconds = r.elapsed.Seconds()
	if res.Seconds > 0 {
		res.OpsPerSec = float64(res.Ops) / res.Seconds
	}
	res.Throughput = r.throughput.Counts()
	res.ErrorSamples = r.errorSamples
	lat := make([]*latencyRecorder, len(r.workers))
	for i, wk := range r.workers {
		lat[i] = &wk.latency
		res.Retries += wk.retries
		res.Errors += wk.errors
		if rt, ok := wk.se.(store.Retrier); ok {
			res.ConflictRetries += rt.ConflictRetries() - wk.conflictStart
		}
	}
	m := merge(lat)
	res.LatencyMS = m.latency()
	res.HistogramUnit = histogramUnit
	var err error
	if res.Histogram, err = m.encode(); err != nil {
		return fmt.Errorf("bench: encoding the latency histogram: %w", err)
	}
	if !r.cfg.OpenLoop() {
		return nil
	}
	ol := &OpenLoop{Rate: r.cfg.Rate, Arrival: r.cfg.Arrival, ResponseMS: res.LatencyMS, LateThresholdMS: float64(r.cfg.LateThreshold) / 1e6}
	for i, wk := range r.workers {
		lat[i] = &wk.service
		ol.LateOps += wk.late
		ol.LatenessMaxMS = math.Max(ol.LatenessMaxMS, float64(wk.latenessMax)/1e6)
	}
	svc := merge(lat)
	ol.ServiceMS = svc.latency()
	if ol.ServiceHistogram, err = svc.encode(); err != nil {
		return fmt.Errorf("bench: encoding the service histogram: %w", err)
	}
	res.OpenLoop = ol
	return nil
}
