package search

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"allot/bench"
	"allot/catalog"
	"allot/store"
)

// Options are the runner's own settings.
type Options struct {
	// CheckSample: CheckSample queries spread evenly over the run
	// (sampleQuery) are compared with the reference (default
	// CheckSampleDefault, capped at the query count).
	CheckSample int
}

// sampleQuery is the query of sample slot j when sample of n queries are
// checked: j*n/sample, so that the sample spans the whole run, not its
// first queries alone. A store whose answers go wrong partway (its
// catalog truncated by another load on a shared server, a lease run out)
// passed a check of the first thousand queries while the rest of the run
// measured searches of a catalog that was no longer there.
func sampleQuery(j, n, sample int) int { return int(int64(j) * int64(n) / int64(sample)) }

// sampleSlot is the sample slot of query i, or -1 when i is not sampled.
func sampleSlot(i, n, sample int) int {
	j := int((int64(i)*int64(sample) + int64(n) - 1) / int64(n))
	if j < sample && sampleQuery(j, n, sample) == i {
		return j
	}
	return -1
}

// procedureNamer is a store that searches with a procedure of its own
// and names it (Tarantool: the published procedure or the corrected one),
// so that the run's description says which one it measured.
type procedureNamer interface{ SearchProcedure() string }

// violationsShown bounds the differences a failed check lists.
const violationsShown = 10

// Run loads w into st (store.Searcher), runs its queries with cfg.Workers
// sessions (store.SearchSession) in closed loop, checks the sample and
// returns the result.
func Run(ctx context.Context, w *Workload, opt Options, cfg bench.RunConfig, st store.Store) (*bench.Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if opt.CheckSample == 0 {
		opt.CheckSample = CheckSampleDefault
	}
	opt.CheckSample = min(opt.CheckSample, len(w.Queries))
	res := &bench.Result{
		Store: cfg.Store, Workers: cfg.Workers, Durability: string(cfg.Durability), Pipeline: cfg.Pipeline,
		Mode: "closed", Started: time.Now().UTC(), Sweep: cfg.Sweep,
		Workload: bench.WorkloadInfo{Name: "search", Rows: len(w.Records), Ops: len(w.Queries), Seed: w.Params.Seed},
		Extra:    map[string]any{},
	}
	searcher, ok := st.(store.Searcher)
	if !ok {
		return nil, fmt.Errorf("%w: %s has no catalog search (store.Searcher)", bench.ErrUnsupported, cfg.Store)
	}
	if d, ok := st.(store.Describer); ok {
		if s, err := d.Describe(ctx); err == nil {
			res.Description = s
		}
	}
	if p, ok := st.(procedureNamer); ok {
		proc := p.SearchProcedure()
		res.Extra["search_procedure"] = proc
		res.Description = strings.TrimPrefix(res.Description+"; search: "+proc, "; ")
	}
	loadStart := time.Now()
	if err := searcher.LoadCatalog(ctx, w.Records, w.Rows); err != nil {
		return nil, fmt.Errorf("search: load: %w", err)
	}
	res.Extra["load_seconds"] = time.Since(loadStart).Seconds()

	sessions := make([]store.SearchSession, cfg.Workers)
	for i := range sessions {
		s, err := st.Session(ctx)
		if err != nil {
			return nil, fmt.Errorf("search: session: %w", err)
		}
		defer s.Close()
		ss, ok := s.(store.SearchSession)
		if !ok {
			return nil, fmt.Errorf("%w: %s sessions cannot search (store.SearchSession)", bench.ErrUnsupported, cfg.Store)
		}
		sessions[i] = ss
		if cfg.Pipeline > 1 {
			if _, ok := s.(store.SearchPipeliner); !ok {
				// Running it one query at a time instead would be a
				// silent change of what is measured.
				return nil, fmt.Errorf("%w: store %s cannot keep searches in flight (--pipeline %d): run it with --pipeline 1", bench.ErrUnsupported, cfg.Store, cfg.Pipeline)
			}
		}
	}

	r := &run{w: w, sample: make([][]catalog.Result, opt.CheckSample), sampleDone: make([]bool, opt.CheckSample), now: time.Now}
	r.timed(ctx, cfg, sessions)
	// Finish the sample untimed where a duration bound cut the run short.
	var extraErr error
	for i := range r.sample {
		if !r.sampleDone[i] {
			out, err := sessions[0].Search(ctx, w.Queries[sampleQuery(i, len(w.Queries), len(r.sample))], nil)
			if err != nil {
				extraErr = err
				break
			}
			r.sample[i], r.sampleDone[i] = out, true
		}
	}
	check := Check(w, r.sample)
	if extraErr != nil {
		check.OK = false
		check.Violations = append(check.Violations, "the sample could not be finished after the timed part: "+extraErr.Error())
		check.ViolationCount++
	}
	r.fill(res, cfg)
	res.Check = check
	res.Status = bench.StatusOK
	if !check.OK {
		res.Status = bench.StatusCheckFailed
	}
	res.Extra["queries_per_sec"] = res.OpsPerSec
	res.Extra["records"] = len(w.Records)
	res.Extra["checked_queries"] = len(r.sample)
	res.Extra["results_returned"] = r.results.Load()
	res.Extra["brand_share"] = w.Params.BrandShare
	return res, nil
}

type run struct {
	w          *Workload
	next       atomic.Int64
	results    atomic.Int64
	done       atomic.Int64
	sample     [][]catalog.Result // sample[j]: the answer to query sampleQuery(j, ...)
	sampleDone []bool
	// now is the clock the timed part reads (time.Now; a test drives a
	// long run with its own).
	now func() time.Time

	elapsed time.Duration
	hist    []*hdrhistogram.Histogram
	maxNS   []int64
	perSec  bench.SecondCounts

	mu           sync.Mutex
	errors       int64
	errorSamples []string
}

func (r *run) timed(ctx context.Context, cfg bench.RunConfig, sessions []store.SearchSession) {
	r.hist = make([]*hdrhistogram.Histogram, len(sessions))
	r.maxNS = make([]int64, len(sessions))
	start := r.now()
	var deadline time.Time
	if cfg.Duration > 0 {
		deadline = start.Add(cfg.Duration)
	}
	// Per worker, so that workers do not contend on shared counters;
	// each within bench.ThroughputSecondsMax seconds.
	completions := make([]bench.SecondCounts, len(sessions))
	var wg sync.WaitGroup
	for wi, s := range sessions {
		r.hist[wi] = hdrhistogram.New(1, int64(time.Hour), 3)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if cfg.Pipeline > 1 {
				r.pipelined(ctx, s.(store.SearchPipeliner), cfg.Pipeline, wi, start, deadline, &completions[wi])
				return
			}
			var out []catalog.Result
			for ctx.Err() == nil {
				i := int(r.next.Add(1) - 1)
				if i >= len(r.w.Queries) {
					return
				}
				t0 := r.now()
				if !deadline.IsZero() && t0.After(deadline) {
					return
				}
				var err error
				out, err = s.Search(ctx, r.w.Queries[i], out[:0])
				t1 := r.now()
				ns := int64(t1.Sub(t0))
				r.hist[wi].RecordValue(min(max(ns, 1), int64(time.Hour)))
				r.maxNS[wi] = max(r.maxNS[wi], ns)
				completions[wi].Add(int(t1.Sub(start)/time.Second), 1)
				r.done.Add(1)
				if err != nil {
					r.mu.Lock()
					r.errors++
					if len(r.errorSamples) < 5 {
						r.errorSamples = append(r.errorSamples, err.Error())
					}
					r.mu.Unlock()
					continue
				}
				r.results.Add(int64(len(out)))
				r.keep(i, out)
			}
		}()
	}
	wg.Wait()
	r.elapsed = r.now().Sub(start)
	for i := range completions {
		r.perSec.Merge(&completions[i])
	}
	runtime.KeepAlive(sessions)
}

// keep keeps a copy of query i's answer when i is in the sample.
func (r *run) keep(i int, out []catalog.Result) {
	if j := sampleSlot(i, len(r.w.Queries), len(r.sample)); j >= 0 {
		r.sample[j], r.sampleDone[j] = slices.Clone(out), true
	}
}

func (r *run) fill(res *bench.Result, cfg bench.RunConfig) {
	res.Ops = r.done.Load()
	res.Seconds = r.elapsed.Seconds()
	if res.Seconds > 0 {
		res.OpsPerSec = float64(res.Ops) / res.Seconds
	}
	h := hdrhistogram.New(1, int64(time.Hour), 3)
	var maxNS int64
	for i, part := range r.hist {
		h.Merge(part)
		maxNS = max(maxNS, r.maxNS[i])
	}
	if h.TotalCount() > 0 {
		res.LatencyMS = bench.LatencyOf(h, maxNS)
		if b, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase); err == nil {
			res.Histogram, res.HistogramUnit = string(b), "ns"
		}
	}
	res.Throughput = r.perSec.Counts()
	res.Errors = r.errors
	res.ErrorSamples = r.errorSamples
}

// Check compares answers with the Reference built from w's records and
// rows: answers[j] is the store's answer to query sampleQuery(j,
// len(w.Queries), len(answers)), the run's sample (every query when there
// are as many answers as queries).
func Check(w *Workload, answers [][]catalog.Result) bench.CheckResult {
	return check(w, answers, foldReference)
}

// check is Check with the reference folding by fold: the tests' broken
// variants prove that the check depends on every rule of the folding.
func check(w *Workload, answers [][]catalog.Result, fold func(string) string) bench.CheckResult {
	ref, d := newReference(w.Records, w.Rows, fold)
	if d != "" {
		return bench.CheckResult{OK: false, ViolationCount: 1, Violations: []string{"the workload's " + d}}
	}
	c := bench.CheckResult{Violations: []string{}}
	addf := func(format string, args ...any) {
		c.ViolationCount++
		if len(c.Violations) < violationsShown {
			c.Violations = append(c.Violations, fmt.Sprintf(format, args...))
		}
	}
	compared := 0 // queries whose reference answer has a result
	for j, got := range answers {
		i := sampleQuery(j, len(w.Queries), len(answers))
		want, d := ref.Search(w.Queries[i])
		if d != "" {
			addf("query %d %+v is invalid: %s", i, w.Queries[i], d)
			continue
		}
		if len(want) > 0 {
			compared++
		}
		if diff := Diff(got, want); diff != "" {
			addf("query %d (prefix %q brand %q offset %d limit %d): %s", i, w.Queries[i].Prefix, w.Queries[i].Brand, w.Queries[i].Offset, w.Queries[i].Limit, diff)
		}
	}
	// Empty against empty proves nothing: a store that finds nothing
	// would pass such a sample.
	if compared == 0 {
		addf("the check compared nothing: none of the %d sampled queries has a result in the reference", len(answers))
	}
	c.OK = c.ViolationCount == 0
	return c
}

// Diff describes the first difference between a store's answer and the
// reference's, or returns "" when they are equal.
func Diff(got, want []catalog.Result) string {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return fmt.Sprintf("result %d is %+v, want %+v", i, got[i], want[i])
		}
	}
	if len(got) != len(want) {
		return fmt.Sprintf("%d results, want %d", len(got), len(want))
	}
	return ""
}

// pipelined is a worker's loop with depth queries in flight: each call
// carries the next depth queries, and each query's latency sample is its
// call's round trip.
func (r *run) pipelined(ctx context.Context, p store.SearchPipeliner, depth, wi int, start, deadline time.Time, completions *bench.SecondCounts) {
	outs := make([][]catalog.Result, depth)
	for ctx.Err() == nil {
		from := int(r.next.Add(int64(depth)) - int64(depth))
		if from >= len(r.w.Queries) {
			return
		}
		to := min(from+depth, len(r.w.Queries))
		t0 := r.now()
		if !deadline.IsZero() && t0.After(deadline) {
			return
		}
		err := p.SearchPipeline(ctx, r.w.Queries[from:to], outs[:to-from])
		t1 := r.now()
		ns := int64(t1.Sub(t0))
		completions.Add(int(t1.Sub(start)/time.Second), int64(to-from))
		r.maxNS[wi] = max(r.maxNS[wi], ns)
		for range to - from {
			r.hist[wi].RecordValue(min(max(ns, 1), int64(time.Hour)))
		}
		r.done.Add(int64(to - from))
		if err != nil {
			r.mu.Lock()
			r.errors += int64(to - from)
			if len(r.errorSamples) < 5 {
				r.errorSamples = append(r.errorSamples, err.Error())
			}
			r.mu.Unlock()
			continue
		}
		for k, out := range outs[:to-from] {
			r.results.Add(int64(len(out)))
			r.keep(from+k, out)
		}
	}
}
