package bench

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"allot/inventory"
	"allot/store"
	"allot/store/memory"
)

// Seconds runs to the moment the last worker finishes. It was read when
// the loop that samples throughput and calls Progress got round to
// noticing, so a Progress callback that took its time (a terminal held
// by ^S or a pager, the bench service's lock) stretched the run's
// seconds and cut its ops/s by as much. Here the callback takes 1.5 s
// once, while the ops take about a third of a second.
func TestAudit16SecondsEndWithTheLastOpNotTheProgressCallback(t *testing.T) {
	w := genWorkload(t, "seed", 300)
	var first, last atomic.Int64 // unix ns of the first call's start, the last call's end
	slow := func(call func() (inventory.Result, error)) (inventory.Result, error) {
		first.CompareAndSwap(0, time.Now().UnixNano())
		time.Sleep(time.Millisecond)
		res, err := call()
		last.Store(time.Now().UnixNano())
		return res, err
	}
	st := &faulty{Store: memory.New(),
		capture: func(se store.Session, ctx context.Context, g inventory.GroupKey, n int64, lines []inventory.Line) (inventory.Result, error) {
			return slow(func() (inventory.Result, error) { return se.Capture(ctx, g, n, lines) })
		},
		release: func(se store.Session, ctx context.Context, k inventory.RowKey, n int64) (inventory.Result, error) {
			return slow(func() (inventory.Result, error) { return se.Release(ctx, k, n) })
		}}
	var calls atomic.Int64
	progress := func(p Progress) {
		if !p.Final && calls.Add(1) == 1 {
			time.Sleep(1500 * time.Millisecond)
		}
	}
	res := runOn(t, RunConfig{Workers: 1, Progress: progress}, st, w)
	if calls.Load() == 0 {
		t.Skip("the run ended before the first progress report: nothing to show")
	}
	span := time.Duration(last.Load() - first.Load()).Seconds()
	if res.Seconds > span+0.2 {
		t.Fatalf("the run's ops spanned %.3f s; the result says %.3f s (%.0f ops/s for %.0f)", span, res.Seconds, res.OpsPerSec, float64(res.Ops)/span)
	}
}

// A --duration bound stops the closed loop on time, whatever the loop
// that calls Progress is doing. The deadline was one of the cases that
// loop selected on, so while a Progress callback took 1.5 s the workers
// went on past a 400 ms bound, and the run did four times the ops and
// seconds asked.
func TestAudit16DurationStopsOnTimeDespiteASlowProgressCallback(t *testing.T) {
	w := genWorkload(t, "seed", 20_000)
	st := &faulty{Store: memory.New(),
		release: func(se store.Session, ctx context.Context, k inventory.RowKey, n int64) (inventory.Result, error) {
			time.Sleep(time.Millisecond)
			return se.Release(ctx, k, n)
		}}
	var calls atomic.Int64
	progress := func(p Progress) {
		if !p.Final && calls.Add(1) == 1 {
			time.Sleep(1500 * time.Millisecond)
		}
	}
	const d = 400 * time.Millisecond
	res := runOn(t, RunConfig{Workers: 2, Duration: d, Progress: progress}, st, w)
	if res.Ops == int64(len(w.Ops)) {
		t.Fatalf("all %d ops ran before the bound", res.Ops)
	}
	// The callback's 1.5 s stall is what must not count; the rest of the
	// slack is for winding down on a loaded machine.
	if res.Seconds > d.Seconds()+1 {
		t.Fatalf("a run bounded to %v ran %.3f s (%d ops)", d, res.Seconds, res.Ops)
	}
}

// The per-second counts are sampled once a second whatever Progress does.
// The sampler and the Progress callback shared one loop, so while a
// callback took 2 s the ticks between went unread (a ticker keeps one)
// and the ops of those seconds were counted in one: a steady run showed
// a spike of twice or three times its rate in its first second.
func TestAudit16ThroughputSampledDespiteASlowProgressCallback(t *testing.T) {
	w := genWorkload(t, "seed", 2500)
	st := &faulty{Store: memory.New(),
		capture: func(se store.Session, ctx context.Context, g inventory.GroupKey, n int64, lines []inventory.Line) (inventory.Result, error) {
			time.Sleep(time.Millisecond)
			return se.Capture(ctx, g, n, lines)
		},
		release: func(se store.Session, ctx context.Context, k inventory.RowKey, n int64) (inventory.Result, error) {
			time.Sleep(time.Millisecond)
			return se.Release(ctx, k, n)
		}}
	var calls atomic.Int64
	progress := func(p Progress) {
		if !p.Final && calls.Add(1) == 1 {
			time.Sleep(2 * time.Second)
		}
	}
	res := runOn(t, RunConfig{Workers: 1, Progress: progress}, st, w)
	if res.Seconds < 2.5 {
		t.Skipf("the run took %.2f s: too fast to show the per-second counts", res.Seconds)
	}
	// Every whole second ran near the run's steady rate (folded seconds
	// counted 2.3 times it; a loaded machine varies the rate by less).
	for s, n := range res.Throughput[:int(res.Seconds)] {
		if float64(n) > 1.9*res.OpsPerSec {
			t.Fatalf("second %d counts %d ops, the run's rate is %.0f/s: seconds folded together (%v)", s, n, res.OpsPerSec, res.Throughput)
		}
	}
}
