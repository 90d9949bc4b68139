package rw

import (
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"allot/bench"
)

// Meter measures a workload kind's run the way bench measures "ims": one
// HDR latency histogram per worker (nanoseconds, 1 ns to an hour, 3
// digits), merged at the end; a count of ops completed in each whole
// second; progress callbacks about four times a second. Workload "kv"
// uses it too.
type Meter struct {
	start   time.Time
	done    atomic.Int64
	seconds []atomic.Int64 // ops completed in second i of the run
	workers []*WorkerMeter
	elapsed time.Duration

	stopProgress chan struct{}
	progressDone sync.WaitGroup
}

// meterSecondsMax bounds the per-second series (an hour, as every
// result's: bench.ThroughputSecondsMax); later seconds fold into the last.
const meterSecondsMax = bench.ThroughputSecondsMax

// WorkerMeter is one worker's share of a Meter; used by one goroutine.
type WorkerMeter struct {
	m   *Meter
	h   *hdrhistogram.Histogram
	max int64
}

// NewMeter makes a meter for workers workers.
func NewMeter(workers int) *Meter {
	m := &Meter{seconds: make([]atomic.Int64, meterSecondsMax)}
	for range workers {
		m.workers = append(m.workers, &WorkerMeter{m: m, h: hdrhistogram.New(1, int64(time.Hour), 3)})
	}
	return m
}

// Worker returns worker i's meter.
func (m *Meter) Worker(i int) *WorkerMeter { return m.workers[i] }

// Start starts the clock and, when progress is set, the progress calls.
// total is the number of ops the run will issue at most.
func (m *Meter) Start(cfg bench.RunConfig, total int64) {
	m.start = time.Now()
	if cfg.Progress == nil {
		return
	}
	m.stopProgress = make(chan struct{})
	m.progressDone.Add(1)
	go func() {
		defer m.progressDone.Done()
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		last, lastAt := int64(0), m.start
		for {
			final := false
			select {
			case <-t.C:
			case <-m.stopProgress:
				final = true
			}
			now, done := time.Now(), m.done.Load()
			rate := 0.0
			if d := now.Sub(lastAt).Seconds(); d > 0 {
				rate = float64(done-last) / d
			}
			cfg.Progress(bench.Progress{Store: cfg.Store, Done: done, Total: total, Elapsed: now.Sub(m.start), OpsPerSec: rate, Final: final})
			last, lastAt = done, now
			if final {
				return
			}
		}
	}()
}

// Elapsed is the time since Start.
func (m *Meter) Elapsed() time.Duration { return time.Since(m.start) }

// Stop stops the clock and the progress calls.
func (m *Meter) Stop() {
	m.elapsed = time.Since(m.start)
	if m.stopProgress != nil {
		close(m.stopProgress)
		m.progressDone.Wait()
	}
}

// Done returns the ops completed so far.
func (m *Meter) Done() int64 { return m.done.Load() }

// Record counts ops completed by one call that took d.
func (w *WorkerMeter) Record(d time.Duration, ops int) {
	v := int64(d)
	w.max = max(w.max, v)
	w.h.RecordValue(min(max(v, 1), int64(time.Hour)))
	w.m.done.Add(int64(ops))
	s := min(int(time.Since(w.m.start)/time.Second), meterSecondsMax-1)
	w.m.seconds[s].Add(int64(ops))
}

// Fill copies the measurements into res: Ops, Seconds, OpsPerSec,
// Throughput, LatencyMS and the encoded histogram.
func (m *Meter) Fill(res *bench.Result) error {
	res.Ops = m.done.Load()
	res.Seconds = m.elapsed.Seconds()
	if res.Seconds > 0 {
		res.OpsPerSec = float64(res.Ops) / res.Seconds
	}
	n := min(int(m.elapsed/time.Second)+1, meterSecondsMax)
	res.Throughput = make([]int64, n)
	for i := range n {
		res.Throughput[i] = m.seconds[i].Load()
	}
	h := hdrhistogram.New(1, int64(time.Hour), 3)
	var maxNS int64
	for _, w := range m.workers {
		h.Merge(w.h)
		maxNS = max(maxNS, w.max)
	}
	if h.TotalCount() > 0 {
		res.LatencyMS = bench.LatencyOf(h, maxNS)
	}
	enc, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		return err
	}
	res.Histogram, res.HistogramUnit = string(enc), "ns"
	return nil
}
