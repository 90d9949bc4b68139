// Package kv is workload "kv": raw key writes or reads with --pipeline N
// requests in flight per connection, in the shape of a client that drove
// Tarantool's disk engine (vinyl) and printed one line a second —
// "Requests per second: 252592, Responses per second: 250376, Pending
// requests: 36014, Latency: 143.8 ms" — on every store whose sessions
// pipeline records (store.RWPipeliner): tarantool and tarantool-vinyl
// (native replace/select, many in flight on the connection), redis
// (pipelined SET/GET), allot and embedded (pipelined STOCK.SET/STOCK.GET
// of rows used as records), postgres and mysql (MySQL's protocol cannot
// pipeline, so the SQL stores send N keys as one multi-row upsert or one
// SELECT ... IN: batching, said so in the setting).
//
// Writes: op i writes key i mod --keys with value i, so a batch never
// names a key twice. Reads: --keys records are loaded first (value = the
// key's number) and each op reads a random one. The checker reads every
// record back: each written key must hold a value that was written to it,
// every acknowledged write's key must exist, and every read must have
// returned the loaded value.
package kv

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"allot/bench"
	"allot/bench/rw"
	"allot/store"
)

// Defaults and bounds.
const (
	OpsDefault  = 200_000
	KeysDefault = 100_000
	KeysMax     = 10_000_000
)

func init() {
	bench.RegisterKind(bench.KindRegistration{
		Name:  "kv",
		About: "raw key writes or reads (--request-type WRITE|READ), --pipeline N in flight per connection, one line a second",
		New:   func() bench.Kind { return &Kind{Out: os.Stderr} },
		// Each write waits for one durable call, shared by the --pipeline
		// writes in flight (or batched into one statement on the SQL
		// stores): the bound's ops in flight are its writes.
		OneDurableCallPerOp: true,
	})
}

// Kind is workload "kv".
type Kind struct {
	RequestType string
	Keys        int
	Lines       bool
	// Out receives the once-a-second lines (standard error).
	Out io.Writer
}

func (k *Kind) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&k.RequestType, "request-type", "WRITE", "kv: WRITE (set keys) or READ (get loaded keys)")
	fs.IntVar(&k.Keys, "keys", KeysDefault, "kv: the key space (writes cycle over it; reads pick from it)")
	fs.BoolVar(&k.Lines, "lines", true, "kv: print one line a second (requests/s, responses/s, pending, latency) to standard error")
}

func (k *Kind) Validate(cfg bench.KindConfig) error {
	k.RequestType = strings.ToUpper(k.RequestType)
	if k.RequestType != "WRITE" && k.RequestType != "READ" {
		return fmt.Errorf("--request-type %q: kv wants WRITE or READ", k.RequestType)
	}
	if k.Keys < 1 || k.Keys > KeysMax {
		return fmt.Errorf("--keys must be from 1 to %d, got %d", KeysMax, k.Keys)
	}
	if p := max(cfg.Pipeline, 1); p > k.Keys {
		return fmt.Errorf("--pipeline %d is more than --keys %d: a batch names distinct keys", p, k.Keys)
	}
	if cfg.Ops < 0 {
		return fmt.Errorf("--ops must not be negative, got %d", cfg.Ops)
	}
	return nil
}

// Key is the key of number i.
func Key(i int) string { return "k" + strconv.Itoa(100_000_000 + i)[1:] }

// options are the record space's options in durability d: plain writes,
// durable in fsync mode.
func options(d store.Durability) store.RWOptions {
	return store.RWOptions{Lock: store.RWLockHard, Durable: d == store.DurabilityFsync, Confirm: true}
}

// StoreUse implements bench.StoreUser: the record space's options, and
// READ only reads.
func (k *Kind) StoreUse(u *store.Use) {
	u.RW = options(u.Durability)
	u.ReadOnly = k.RequestType == "READ"
}

// Run runs the workload.
func (k *Kind) Run(ctx context.Context, cfg bench.KindConfig, st store.Store) (*bench.Result, error) {
	if err := cfg.RunConfig.Validate(); err != nil {
		return nil, err
	}
	if cfg.Rate > 0 {
		return nil, errors.New("kv: the open loop (--rate) is not supported; kv runs closed loop with --pipeline in flight")
	}
	if cfg.Ops == 0 {
		cfg.Ops = OpsDefault
	}
	rs, ok := st.(store.RWStore)
	if !ok {
		return nil, fmt.Errorf("%w: %s holds no records (store.RWStore)", bench.ErrUnsupported, cfg.Store)
	}
	space, err := rs.RWOpen(ctx, options(cfg.Durability))
	if err != nil {
		if errors.Is(err, store.ErrRWUnsupported) {
			return nil, fmt.Errorf("%w: %v", bench.ErrUnsupported, err)
		}
		return nil, err
	}
	defer space.Close()
	if space.Info().Queue {
		return nil, fmt.Errorf("%w: %s is a queue, not a key/value store", bench.ErrUnsupported, cfg.Store)
	}
	r := &run{k: k, cfg: cfg, space: space, depth: max(cfg.Pipeline, 1), meter: rw.NewMeter(cfg.Workers)}
	return r.run(ctx, st)
}

type run struct {
	k     *Kind
	cfg   bench.KindConfig
	space store.RWSpace
	depth int
	meter *rw.Meter

	issued             atomic.Int64
	sent, received     atomic.Int64
	latencyNanos       atomic.Int64 // summed batch latencies of the current second
	latencyCalls       atomic.Int64
	errors, readsWrong atomic.Int64
	errMu              sync.Mutex
	errSamples         []string
	failedFrom         []int64 // first op numbers of failed write batches
	lines              []string

	// t0 is the clock the write batches are timed on; spans[w] holds
	// worker w's write batches in the order it sent them, for the
	// overwrite check (check.go), at most spansMax over all workers.
	t0     time.Time
	spans  [][]batchSpan
	spansN atomic.Int64
}

// batchSpan is one write batch: its first op, when it was sent and when
// its reply came (ns after run.t0; -1: it failed, its outcome unknown).
type batchSpan struct {
	from, sentNS, ackedNS int64
}

// spansMax bounds the write batches timed for the overwrite check (24
// bytes each): a long --duration run with --pipeline 1 would otherwise
// keep hundreds of megabytes. Batches past it are treated as failed
// ones, which the check never blames, so the bound costs the check power
// on the longest runs and never a false violation.
const spansMax = 1 << 22

func (r *run) fail(err error, from int64) {
	r.errors.Add(1)
	r.errMu.Lock()
	if len(r.errSamples) < 5 {
		r.errSamples = append(r.errSamples, err.Error())
	}
	if from >= 0 {
		r.failedFrom = append(r.failedFrom, from)
	}
	r.errMu.Unlock()
}

func (r *run) claim(ctx context.Context) (from int64, n int) {
	if ctx.Err() != nil || (r.cfg.Duration > 0 && r.meter.Elapsed() >= r.cfg.Duration) {
		return 0, 0
	}
	to := r.issued.Add(int64(r.depth))
	from = to - int64(r.depth)
	if from >= int64(r.cfg.Ops) {
		return 0, 0
	}
	return from, int(min(to, int64(r.cfg.Ops)) - from)
}

func (r *run) run(ctx context.Context, st store.Store) (*bench.Result, error) {
	cfg := r.cfg
	res := &bench.Result{
		Store: cfg.Store, Workers: cfg.Workers, Durability: string(cfg.Durability), Pipeline: r.depth, Mode: "closed",
		Sweep: cfg.Sweep, Started: time.Now().UTC(),
		Workload: bench.WorkloadInfo{Name: "kv/" + r.k.RequestType, Rows: r.k.Keys, Ops: cfg.Ops, Seed: cfg.Seed},
	}
	if d, ok := st.(store.Describer); ok {
		if desc, err := d.Describe(ctx); err == nil {
			res.Description = desc
		}
	}
	if r.k.RequestType == "READ" {
		recs := make([]store.RWRecord, r.k.Keys)
		for i := range recs {
			recs[i] = store.RWRecord{Key: Key(i), Value: int64(i)}
		}
		if err := r.space.Load(ctx, recs); err != nil {
			return nil, fmt.Errorf("kv: loading %d keys: %w", len(recs), err)
		}
	}
	sessions := make([]store.RWPipeliner, cfg.Workers)
	closers := make([]store.RWSession, 0, cfg.Workers)
	defer func() {
		for _, s := range closers {
			s.Close()
		}
	}()
	for i := range sessions {
		s, err := r.space.Session(ctx)
		if err != nil {
			return nil, fmt.Errorf("kv: opening session %d: %w", i, err)
		}
		closers = append(closers, s)
		p, ok := s.(store.RWPipeliner)
		if !ok {
			return nil, fmt.Errorf("%w: %s sessions cannot pipeline records (store.RWPipeliner)", bench.ErrUnsupported, cfg.Store)
		}
		sessions[i] = p
	}
	r.spans = make([][]batchSpan, cfg.Workers)
	r.t0 = time.Now()
	r.meter.Start(cfg.RunConfig, int64(cfg.Ops))
	stop := make(chan struct{})
	var printer sync.WaitGroup
	printer.Add(1)
	go func() {
		defer printer.Done()
		r.printLines(stop)
	}()
	wctx, cancel := rw.StuckBound(ctx, cfg.Duration)
	defer cancel()
	var wg sync.WaitGroup
	for i := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.worker(wctx, i, sessions[i])
		}()
	}
	wg.Wait()
	r.meter.Stop()
	if wctx.Err() != nil && ctx.Err() == nil {
		r.fail(fmt.Errorf("calls still unanswered %v after the --duration bound were cancelled", rw.StuckGrace), -1)
	}
	close(stop)
	printer.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	final, err := r.space.Records(ctx)
	if err != nil {
		return nil, fmt.Errorf("kv: reading the keys back: %w", err)
	}
	if err := r.meter.Fill(res); err != nil {
		return nil, err
	}
	res.Errors = r.errors.Load()
	res.ErrorSamples = r.errSamples
	res.Extra = map[string]any{
		"request_type": r.k.RequestType, "keys": r.k.Keys, "pipeline": r.depth,
		"setting": r.space.Info().Setting, "per_second": r.lines,
	}
	res.Check = r.check(final)
	res.Status = bench.StatusOK
	if !res.Check.OK {
		res.Status = bench.StatusCheckFailed
	}
	return res, nil
}

func (r *run) worker(ctx context.Context, w int, p store.RWPipeliner) {
	rng := rand.New(rand.NewPCG(r.cfg.Seed, uint64(w)+1))
	wm := r.meter.Worker(w)
	recs := make([]store.RWRecord, 0, r.depth)
	keys := make([]string, 0, r.depth)
	want := make([]int64, 0, r.depth)
	values := make([]int64, r.depth)
	found := make([]bool, r.depth)
	for {
		from, n := r.claim(ctx)
		if n == 0 {
			return
		}
		var err error
		r.sent.Add(int64(n))
		start := time.Now()
		if r.k.RequestType == "WRITE" {
			recs = recs[:0]
			for i := from; i < from+int64(n); i++ {
				recs = append(recs, store.RWRecord{Key: Key(int(i % int64(r.k.Keys))), Value: i})
			}
			err = p.PipelineWrite(ctx, recs)
		} else {
			keys, want = keys[:0], want[:0]
			for range n {
				i := rng.IntN(r.k.Keys)
				keys = append(keys, Key(i))
				want = append(want, int64(i))
			}
			err = p.PipelineRead(ctx, keys, values[:n], found[:n])
		}
		d := time.Since(start)
		r.received.Add(int64(n))
		r.latencyNanos.Add(int64(d))
		r.latencyCalls.Add(1)
		wm.Record(d, n)
		if r.k.RequestType == "WRITE" && r.spansN.Add(1) <= spansMax {
			span := batchSpan{from: from, sentNS: int64(start.Sub(r.t0)), ackedNS: -1}
			if err == nil {
				span.ackedNS = span.sentNS + int64(d)
			}
			r.spans[w] = append(r.spans[w], span)
		}
		if err != nil {
			r.fail(err, from)
			continue
		}
		if r.k.RequestType == "READ" {
			for i := range n {
				if !found[i] || values[i] != want[i] {
					r.readsWrong.Add(1)
				}
			}
		}
	}
}

// printLines prints the seed client's line once a second until stop.
func (r *run) printLines(stop <-chan struct{}) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	var lastSent, lastReceived int64
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		sent, received := r.sent.Load(), r.received.Load()
		calls, nanos := r.latencyCalls.Swap(0), r.latencyNanos.Swap(0)
		latency := 0.0
		if calls > 0 {
			latency = float64(nanos) / float64(calls) / 1e6
		}
		line := fmt.Sprintf("Requests per second: %d, Responses per second: %d, Pending requests: %d, Latency: %.1f ms",
			sent-lastSent, received-lastReceived, sent-received, latency)
		lastSent, lastReceived = sent, received
		r.lines = append(r.lines, line)
		if r.k.Lines && r.k.Out != nil {
			fmt.Fprintf(r.k.Out, "kv %s: %s\n", r.cfg.Store, line)
		}
	}
}
