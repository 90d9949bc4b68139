package rw

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"allot/bench"
	"allot/store"
)

// errorSamplesMax is how many error messages a result quotes.
const errorSamplesMax = 5

// StuckGrace is how long after a --duration bound the calls still in
// flight may take before they are cancelled (and counted as errors): a
// store that stops answering fails the run instead of hanging it.
const StuckGrace = 30 * time.Second

// StuckBound returns the context the workers of a run bounded by duration
// use: ctx, cancelled StuckGrace after the duration. Without a duration
// it is ctx.
func StuckBound(ctx context.Context, duration time.Duration) (context.Context, context.CancelFunc) {
	if duration <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, duration+StuckGrace)
}

// RecordKey is the key of loaded record i.
func RecordKey(i int) string { return fmt.Sprintf("r%07d", i) }

// LoadedValue is the value record i is loaded with.
func LoadedValue(i int) int64 { return int64(i) + 1 }

// writeKey is the key of worker w's n-th insert.
func writeKey(w int, n int64) string { return fmt.Sprintf("w%04d-%09d", w, n) }

// run is one rw run on one record space.
type run struct {
	k     *Kind
	cfg   bench.KindConfig
	space store.RWSpace
	info  store.RWInfo
	meter *Meter
	total int64 // units of work to issue (records read, written or modified)

	issued      atomic.Int64
	issuedReads atomic.Int64 // MIXED's readers' budget
	// acked[i] counts record i's acknowledged modifies; unknown[i] those
	// whose call failed (they may or may not have applied). issuedMods[i]
	// counts those sent, before each is sent: no read can see more.
	acked, unknown, issuedMods []atomic.Int64
	// Written holds each worker's acknowledged inserts (and those of
	// failed calls, which may exist or not).
	written, writtenUnknown [][]store.RWRecord
	// consumed: the values each worker read from a queue.
	consumed [][]int64

	reads, readsWrong, readsMissing atomic.Int64
	// readsStale: reads older than a modify acknowledged before they began.
	readsStale            atomic.Int64
	readCalls, writeCalls atomic.Int64
	readNanos, writeNanos atomic.Int64
	retries, errors       atomic.Int64
	errMu                 sync.Mutex
	errSamples            []string
	loaded                []store.RWRecord

	// readEnd and writeEnd: when (ns after the meter's start) the last
	// worker that read, or wrote, ran out of work; each role's rate is
	// over its own time (MIXED's readers may finish long before its
	// writers).
	readEnd, writeEnd atomic.Int64
}

func newRun(k *Kind, cfg bench.KindConfig, space store.RWSpace) *run {
	r := &run{k: k, cfg: cfg, space: space, info: space.Info(), meter: NewMeter(cfg.Workers), total: int64(cfg.Ops)}
	r.acked = make([]atomic.Int64, k.Records)
	r.unknown = make([]atomic.Int64, k.Records)
	r.issuedMods = make([]atomic.Int64, k.Records)
	r.written = make([][]store.RWRecord, cfg.Workers)
	r.writtenUnknown = make([][]store.RWRecord, cfg.Workers)
	r.consumed = make([][]int64, cfg.Workers)
	return r
}

func (r *run) fail(err error) {
	r.errors.Add(1)
	r.errMu.Lock()
	if len(r.errSamples) < errorSamplesMax {
		r.errSamples = append(r.errSamples, err.Error())
	}
	r.errMu.Unlock()
}

// claim takes up to n units of work for a worker of role (MIXED's
// readers and writers have budgets of their own, in proportion to their
// numbers, so that the faster role cannot take all the work); 0 when none
// is left or time is up.
func (r *run) claim(ctx context.Context, role string, n int) int {
	if ctx.Err() != nil || (r.cfg.Duration > 0 && r.meter.Elapsed() >= r.cfg.Duration) {
		return 0
	}
	issued, total := &r.issued, r.total
	if role != "" {
		readers := r.readers()
		readTotal := r.total * int64(readers) / int64(r.cfg.Workers)
		issued, total = &r.issuedReads, readTotal
		if role != RequestRead {
			issued, total = &r.issued, r.total-readTotal
		}
	}
	to := issued.Add(int64(n))
	from := to - int64(n)
	if from >= total {
		return 0
	}
	return int(min(to, total) - from)
}

func (r *run) run(ctx context.Context, st store.Store) (*bench.Result, error) {
	cfg := r.cfg
	name := "rw/" + r.k.RequestType
	res := &bench.Result{
		Store: cfg.Store, Workers: cfg.Workers, Durability: string(cfg.Durability), Pipeline: 1, Mode: "closed",
		Sweep: cfg.Sweep, Started: time.Now().UTC(),
		Workload: bench.WorkloadInfo{Name: name, Rows: r.k.Records, Ops: cfg.Ops, Seed: cfg.Seed},
	}
	if d, ok := st.(store.Describer); ok {
		if desc, err := d.Describe(ctx); err == nil {
			res.Description = desc
		}
	}
	// What to load: records each with a value of its own, or on a queue
	// the messages a READ run consumes (a WRITE run starts from an empty
	// queue). Distinct values, none of them 0, hold reads to the record
	// they name: with every record at 0, a store answering "0" to any
	// read without looking would pass.
	switch {
	case !r.info.Queue:
		r.loaded = make([]store.RWRecord, r.k.Records)
		for i := range r.loaded {
			r.loaded[i] = store.RWRecord{Key: RecordKey(i), Value: LoadedValue(i)}
		}
	case r.k.RequestType == RequestRead:
		r.loaded = make([]store.RWRecord, cfg.Ops)
		for i := range r.loaded {
			r.loaded[i] = store.RWRecord{Key: fmt.Sprintf("m%09d", i), Value: int64(i)}
		}
	}
	if len(r.loaded) > 0 {
		if err := r.space.Load(ctx, r.loaded); err != nil {
			return nil, fmt.Errorf("rw: loading %d records: %w", len(r.loaded), err)
		}
	}
	if r.info.Queue && r.k.RequestType != RequestRead && r.k.RequestType != RequestWrite {
		return nil, fmt.Errorf("%w: %s is a queue: it publishes (WRITE) and consumes (READ), it has no record to %s", bench.ErrUnsupported, cfg.Store, r.k.RequestType)
	}
	sessions := make([]store.RWSession, cfg.Workers)
	defer func() {
		for _, s := range sessions {
			if s != nil {
				s.Close()
			}
		}
	}()
	for i := range sessions {
		s, err := r.space.Session(ctx)
		if err != nil {
			return nil, fmt.Errorf("rw: opening session %d: %w", i, err)
		}
		sessions[i] = s
	}
	r.meter.Start(cfg.RunConfig, r.total)
	wctx, cancel := StuckBound(ctx, cfg.Duration)
	defer cancel()
	var wg sync.WaitGroup
	for i := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.worker(wctx, i, sessions[i])
			// A queue's consumer holds the messages it prefetched until
			// it closes: left open while the other workers finish, it
			// starves their last reads, each of which then waits out the
			// store's read timeout for nothing (and counts it as a read).
			if r.info.Queue {
				r.closeSession(sessions, i)
			}
		}()
	}
	wg.Wait()
	r.meter.Stop()
	if wctx.Err() != nil && ctx.Err() == nil {
		r.fail(fmt.Errorf("calls still unanswered %v after the --duration bound were cancelled", StuckGrace))
	}
	// Sessions close before the read-back: a queue returns the messages a
	// consumer had prefetched but not taken when its channel closes.
	for i := range sessions {
		r.closeSession(sessions, i)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	final, err := r.space.Records(ctx)
	if err != nil {
		return nil, fmt.Errorf("rw: reading the records back: %w", err)
	}
	if err := r.meter.Fill(res); err != nil {
		return nil, err
	}
	res.Errors = r.errors.Load()
	res.ErrorSamples = r.errSamples
	res.ConflictRetries = r.retries.Load()
	res.OneDurableCallPerOp = r.k.oneDurableCallPerOp(r.info.Queue, cfg.Durability)
	res.Extra = r.extra()
	res.Check = r.check(final, res.Extra)
	res.Status = bench.StatusOK
	if !res.Check.OK {
		res.Status = bench.StatusCheckFailed
	}
	return res, nil
}

// closeSession closes sessions[i] if it is open, counting a failure as
// an error, and marks it closed.
func (r *run) closeSession(sessions []store.RWSession, i int) {
	if sessions[i] == nil {
		return
	}
	if err := sessions[i].Close(); err != nil {
		r.fail(fmt.Errorf("closing session %d: %w", i, err))
	}
	sessions[i] = nil
}

// extra is rw's own figures.
func (r *run) extra() map[string]any {
	e := map[string]any{
		"request_type":  r.k.RequestType,
		"lock":          r.k.Lock,
		"versioned":     r.k.Versioned,
		"transactional": r.k.Transactional,
		"durable":       r.k.options(r.cfg.Durability).Durable,
		"setting":       r.info.Setting,
		"reads":         r.reads.Load(),
	}
	if n := r.readsMissing.Load(); n > 0 && r.info.Queue {
		e["reads_empty"] = n // a consumer found no message in time
	}
	if r.k.Transactional {
		e["batch"] = r.k.Batch
	}
	if r.k.RequestType == RequestMixed {
		e["read_ratio"] = r.k.ReadRatio
		if r.cfg.Workers >= 2 {
			e["readers"] = r.readers()
			e["writers"] = r.cfg.Workers - r.readers()
		}
	}
	if n, s := r.readCalls.Load(), time.Duration(r.readEnd.Load()).Seconds(); n > 0 && s > 0 {
		e["read_ops_per_sec"] = float64(n) / s
		e["read_mean_ms"] = float64(r.readNanos.Load()) / float64(n) / 1e6
	}
	if n, s := r.writeCalls.Load(), time.Duration(r.writeEnd.Load()).Seconds(); n > 0 && s > 0 {
		e["write_calls_per_sec"] = float64(n) / s
		e["write_mean_ms"] = float64(r.writeNanos.Load()) / float64(n) / 1e6
	}
	return e
}

// mixedRole is worker w's one request type in MIXED: the first
// round(workers x read-ratio) workers only read and the others only
// modify, so that readers meet writers that hold locks and the read rate
// shows what a lock costs readers (a worker that did both would wait out
// its own writes too). At least one of each when there are two workers or
// more; with one worker, "" (it draws each op's type at the ratio).
func (r *run) mixedRole(w int) string {
	if r.k.RequestType != RequestMixed || r.cfg.Workers < 2 {
		return ""
	}
	if w < r.readers() {
		return RequestRead
	}
	return RequestModifyLocked
}

// readers is the number of MIXED's reader workers (two workers or more).
func (r *run) readers() int {
	n := r.cfg.Workers
	return min(max(int(math.Round(float64(n)*r.k.ReadRatio)), 1), n-1)
}

// roleDone notes that a worker of role (a mixedRole; "" does both) ran
// out of work: the end of that role's time, if it is the last of its
// role so far.
func (r *run) roleDone(role string) {
	end := int64(r.meter.Elapsed())
	if role != RequestModifyLocked {
		storeMax(&r.readEnd, end)
	}
	if role != RequestRead {
		storeMax(&r.writeEnd, end)
	}
}

// storeMax sets a to v if v is more.
func storeMax(a *atomic.Int64, v int64) {
	for old := a.Load(); v > old && !a.CompareAndSwap(old, v); old = a.Load() {
	}
}

// worker issues ops until the work or the time runs out.
func (r *run) worker(ctx context.Context, w int, s store.RWSession) {
	defer r.roleDone(r.mixedRole(w))
	rng := rand.New(rand.NewPCG(r.cfg.Seed, uint64(w)+1))
	wm := r.meter.Worker(w)
	var seq int64
	keys := make([]string, 0, r.k.Batch)
	idx := make([]int, 0, r.k.Batch)
	recs := make([]store.RWRecord, 0, r.k.Batch)
	batch := 1
	if r.k.Transactional {
		batch = r.k.Batch
	}
	for {
		typ := r.k.RequestType
		if typ == RequestMixed {
			typ = RequestModifyLocked
			switch role := r.mixedRole(w); {
			case role != "":
				typ = role
			case rng.Float64() < r.k.ReadRatio:
				typ = RequestRead
			}
		}
		n := 1
		if typ != RequestRead {
			n = batch
		}
		if n = r.claim(ctx, r.mixedRole(w), n); n == 0 {
			return
		}
		switch typ {
		case RequestRead:
			key := ""
			i := rng.IntN(r.k.Records)
			if !r.info.Queue {
				key = RecordKey(i)
			}
			// A modify acknowledged before the read starts was committed
			// before it: the read must see it (a read concurrent with a
			// modify may see it or not).
			var floor int64
			if !r.info.Queue {
				floor = r.loaded[i].Value + r.acked[i].Load()
			}
			start := time.Now()
			v, found, err := s.Read(ctx, key)
			d := time.Since(start)
			wm.Record(d, 1)
			r.readCalls.Add(1)
			r.readNanos.Add(int64(d))
			if err != nil {
				r.fail(fmt.Errorf("read %s: %w", key, err))
				continue
			}
			r.reads.Add(1)
			switch {
			case r.info.Queue && found:
				r.consumed[w] = append(r.consumed[w], v)
			case !found:
				r.readsMissing.Add(1)
			case r.k.RequestType == RequestRead && v != r.loaded[i].Value:
				r.readsWrong.Add(1)
			case v < r.loaded[i].Value || v > r.loaded[i].Value+r.issuedMods[i].Load():
				// Modifies only add 1 each: below the loaded value, or
				// above it by more than the modifies sent so far, is no
				// write's (another record's value, say).
				r.readsWrong.Add(1)
			case v < floor:
				// Older than a modify acknowledged before the read began:
				// a stale read (a cache not invalidated, a lagging copy).
				r.readsStale.Add(1)
			}
		case RequestWrite:
			recs = recs[:0]
			for range n {
				recs = append(recs, store.RWRecord{Key: writeKey(w, seq), Value: seq + 1})
				seq++
			}
			start := time.Now()
			err := s.Write(ctx, recs)
			d := time.Since(start)
			wm.Record(d, n)
			r.writeCalls.Add(1)
			r.writeNanos.Add(int64(d))
			if err != nil {
				r.fail(fmt.Errorf("write %s..: %w", recs[0].Key, err))
				r.writtenUnknown[w] = append(r.writtenUnknown[w], recs...)
				continue
			}
			r.written[w] = append(r.written[w], recs...)
		default: // a modify
			idx = idx[:0]
			for len(idx) < n {
				i := rng.IntN(r.k.Records)
				if !slices.Contains(idx, i) {
					idx = append(idx, i)
				}
			}
			slices.Sort(idx)
			keys = keys[:0]
			for _, i := range idx {
				keys = append(keys, RecordKey(i))
			}
			mode := r.k.modifyMode()
			if typ == RequestModifyLocked && !r.k.Versioned {
				mode = store.RWLocked
			}
			for _, i := range idx {
				r.issuedMods[i].Add(1)
			}
			start := time.Now()
			retries, err := s.Modify(ctx, keys, 1, mode)
			d := time.Since(start)
			wm.Record(d, n)
			r.writeCalls.Add(1)
			r.writeNanos.Add(int64(d))
			r.retries.Add(int64(retries))
			tally := r.acked
			if err != nil {
				r.fail(fmt.Errorf("modify %s: %w", keys, err))
				tally = r.unknown
			}
			for _, i := range idx {
				tally[i].Add(1)
			}
		}
	}
}
