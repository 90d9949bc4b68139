package embedded_test

import (
	"context"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"allot/engine"
	"allot/inventory"
	"allot/store"
	_ "allot/store/embedded"
	_ "allot/store/memory"
	"allot/workload"
)

// parallelWorkers is the bench's default worker count (allot bench
// --workers): sixteen closed-loop sessions, one op in flight each.
const parallelWorkers = 16

var (
	seedOnce sync.Once
	seedW    *workload.Workload
	seedErr  error
)

// seedWorkload is the seed preset (1000 rows) with 400,000 ops, which the
// benchmark cycles through.
func seedWorkload(b *testing.B) *workload.Workload {
	seedOnce.Do(func() {
		p, err := workload.Preset("seed")
		if err != nil {
			seedErr = err
			return
		}
		p.Ops = 400_000
		seedW, seedErr = workload.Generate(p)
	})
	if seedErr != nil {
		b.Fatal(seedErr)
	}
	return seedW
}

// BenchmarkParallelSeed runs the shape of `allot bench --stores
// embedded,memory --durability write --preset seed` in-process: the seed
// rows loaded, then parallelWorkers sessions each taking the next op of
// the workload and waiting for its result (the bench's closed loop at
// pipeline 1), without the bench's latency recording or retries. A capture
// that finds too little stock is counted (insufficient/op), not retried.
// Compare the stores with benchstat; ns/op is wall time per op of the
// whole group, so the ratio of the memory store's ns/op to the embedded
// store's is the bench's ops/s ratio.
func BenchmarkParallelSeed(b *testing.B) {
	for _, name := range []string{"memory", "embedded"} {
		b.Run("store="+name, func(b *testing.B) {
			benchParallelSeed(b, name, store.DurabilityWrite)
		})
	}
}

func benchParallelSeed(b *testing.B, name string, dur store.Durability) {
	ctx := context.Background()
	w := seedWorkload(b)
	st := openSeeded(b, name, dur, w)
	defer st.Close()
	sessions := make([]store.Session, parallelWorkers)
	for i := range sessions {
		var err error
		if sessions[i], err = st.Session(ctx); err != nil {
			b.Fatal(err)
		}
	}
	runParallelSeed(b, w, sessions)
	for _, se := range sessions {
		se.Close()
	}
}

// openSeeded opens the store name in mode dur with w's rows loaded.
func openSeeded(b *testing.B, name string, dur store.Durability, w *workload.Workload) store.Store {
	ctx := context.Background()
	st, err := store.Open(ctx, name, store.Config{Durability: dur})
	if err != nil {
		b.Fatal(err)
	}
	if err := st.Load(ctx, w.Initial); err != nil {
		st.Close()
		b.Fatal(err)
	}
	return st
}

// runParallelSeed runs b.N ops of w, cycling, over the sessions, one
// goroutine each.
func runParallelSeed(b *testing.B, w *workload.Workload, sessions []store.Session) {
	ctx := context.Background()
	ops := w.Ops
	var next, insufficient atomic.Int64
	var wg sync.WaitGroup
	cpu0 := processCPU(b)
	b.ResetTimer()
	for _, se := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var lines []inventory.Line
			var short int64
			defer func() { insufficient.Add(short) }()
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				op := &ops[i%int64(len(ops))]
				var res inventory.Result
				var err error
				if op.Kind == inventory.KindCapture {
					res, err = se.Capture(ctx, op.Key.Group(), op.N, lines)
					if cap(res.Lines) > cap(lines) {
						lines = res.Lines[:0]
					}
				} else {
					res, err = se.Release(ctx, op.Key, op.N)
				}
				if err != nil {
					b.Error(err)
					return
				}
				switch res.Code {
				case inventory.CodeOK:
				case inventory.CodeInsufficient:
					short++
				default:
					b.Errorf("op %d: %s %s", i, res.Code, res.Detail)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	cpu := processCPU(b) - cpu0
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
	// The process's CPU time (user and system, every thread) per op, and
	// how many cores it kept busy on average: under one contended mutex
	// the work runs mostly one goroutine at a time.
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
	b.ReportMetric(cpu.Seconds()/b.Elapsed().Seconds(), "cores")
	b.ReportMetric(float64(insufficient.Load())/float64(b.N), "insufficient/op")
}

// processCPU returns the user and system CPU time the process used so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkParallelSeedEngine splits the embedded store's cost: the
// engine called directly (no store session), in write mode with the
// system clock, in write mode with a clock that stands still (no clock
// read's cost, no new millisecond's work: SetTime, Collect), and in none
// mode (frames written once they hold NoneFlushBytes, not per op).
func BenchmarkParallelSeedEngine(b *testing.B) {
	for _, c := range []struct {
		name    string
		dur     engine.Durability
		clock   engine.Clock
		segment int64
	}{
		{"write", engine.DurabilityWrite, nil, 0},
		{"write-stillclock", engine.DurabilityWrite, stillClock{time.Now()}, 0},
		{"write-segment512M", engine.DurabilityWrite, nil, 512 << 20},
		{"none", engine.DurabilityNone, nil, 0},
	} {
		b.Run("engine="+c.name, func(b *testing.B) {
			w := seedWorkload(b)
			e, err := engine.Open(engine.Config{Dir: b.TempDir(), Durability: c.dur, Clock: c.clock, SegmentBytes: c.segment})
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			for _, r := range w.Initial {
				if _, err := e.Stock(r.Key, r.Count, r.Price); err != nil {
					b.Fatal(err)
				}
			}
			sessions := make([]store.Session, parallelWorkers)
			for i := range sessions {
				sessions[i] = &engineSession{e: e, r: engine.NewRequest()}
			}
			before := e.Stats().JournalBytes
			runParallelSeed(b, w, sessions)
			// Journal bytes written per op (frames of one op each in write
			// mode: a 36-byte frame header and the op).
			b.ReportMetric(float64(e.Stats().JournalBytes-before)/float64(b.N), "journal-B/op")
		})
	}
}

type stillClock struct{ t time.Time }

func (c stillClock) Now() time.Time { return c.t }

// engineSession is a store.Session straight on an engine, one reused
// request.
type engineSession struct {
	e *engine.Engine
	r *engine.Request
}

func (s *engineSession) Capture(_ context.Context, g inventory.GroupKey, n int64, lines []inventory.Line) (inventory.Result, error) {
	s.r.Op, s.r.Lines = inventory.Capture(g, n), lines
	return s.submit()
}

func (s *engineSession) Release(_ context.Context, k inventory.RowKey, n int64) (inventory.Result, error) {
	s.r.Op, s.r.Lines = inventory.Release(k, n), nil
	return s.submit()
}

func (s *engineSession) submit() (inventory.Result, error) {
	if err := s.e.Submit(s.r); err != nil {
		return inventory.Result{}, err
	}
	err := s.r.Wait()
	return s.r.Result, err
}

func (s *engineSession) Close() error { return nil }
