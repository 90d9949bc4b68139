package bench

import (
	"context"
	"strings"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"allot/store/memory"
)

// TestOpenLoopIsFreeOfCoordinatedOmission: a store that stops for 200 ms
// in the middle of a fixed-rate run. Every op meant to start during the
// stall waits for it, so the response time (from the intended start) must
// show ~200 ms at its high percentiles; the service time (from the actual
// send) must not, because once the stall is over each op is served fast.
// A closed loop would hide the stall almost entirely: its workers simply
// stop sending while the store is stuck.
func TestOpenLoopIsFreeOfCoordinatedOmission(t *testing.T) {
	const (
		rate  = 2000.0
		ops   = 4000 // two seconds
		pause = 200 * time.Millisecond
	)
	w := genWorkload(t, "seed", ops)
	st := &stalling{Store: memory.New(), after: ops / 2, pause: pause}
	res := runOn(t, RunConfig{Workers: 8, Rate: rate}, st, w)
	if !res.Check.OK || res.Errors != 0 || res.Ops != ops {
		t.Fatalf("check %+v errors %d ops %d", res.Check, res.Errors, res.Ops)
	}
	ol := res.OpenLoop
	if ol == nil || res.Mode != "open" {
		t.Fatal("no open-loop results")
	}
	t.Logf("response %+v", ol.ResponseMS)
	t.Logf("service  %+v", ol.ServiceMS)
	t.Logf("late ops %d, lateness max %.1f ms", ol.LateOps, ol.LatenessMaxMS)
	pauseMS := float64(pause) / 1e6
	// About rate*pause = 400 ops (10%) were due during the stall, their
	// waits spread evenly over 0..200 ms: p99 near 180 ms, max near 200.
	if ol.ResponseMS.Max < 0.95*pauseMS || ol.ResponseMS.P999 < 0.8*pauseMS || ol.ResponseMS.P99 < 0.5*pauseMS {
		t.Errorf("response time %+v does not show the %v stall", ol.ResponseMS, pause)
	}
	if ol.ResponseMS != res.LatencyMS {
		t.Errorf("latency_ms %+v is not the response time %+v", res.LatencyMS, ol.ResponseMS)
	}
	// Only the few ops in flight when the stall began (at most one per
	// worker, 0.2% of ops) were served slowly.
	if ol.ServiceMS.P99 > 0.25*pauseMS {
		t.Errorf("service time p99 %.1f ms: the stall leaked into it", ol.ServiceMS.P99)
	}
	if ol.LateOps < 100 || ol.LatenessMaxMS < 0.75*pauseMS {
		t.Errorf("%d late ops, lateness max %.1f ms: the stall's backlog was not counted", ol.LateOps, ol.LatenessMaxMS)
	}
	svc, err := hdrhistogram.Decode([]byte(ol.ServiceHistogram))
	if err != nil || svc.TotalCount() != ops {
		t.Fatalf("service histogram: %v, %d samples", err, svc.TotalCount())
	}

	closed := runOn(t, RunConfig{Workers: 8}, &stalling{Store: memory.New(), after: ops / 2, pause: pause}, w)
	t.Logf("closed loop under the same stall: %+v (the stall is %d samples of %d)", closed.LatencyMS, 8, ops)
}

func TestOpenLoopPoissonAndDuration(t *testing.T) {
	w := genWorkload(t, "seed", 100_000)
	res := runMemory(t, RunConfig{Workers: 4, Rate: 5000, Arrival: ArrivalPoisson, ArrivalSeed: 3, Duration: 400 * time.Millisecond}, w)
	if !res.Check.OK || res.Errors != 0 {
		t.Fatalf("check %+v errors %d", res.Check, res.Errors)
	}
	// Ops are issued while their intended start is within the bound: about
	// rate * duration of them, whatever the machine's speed.
	if res.Ops < 1000 || res.Ops > 3000 {
		t.Fatalf("%d ops in 400 ms at 5000/s", res.Ops)
	}
	if res.OpenLoop.Arrival != ArrivalPoisson {
		t.Fatalf("arrival %q", res.OpenLoop.Arrival)
	}
}

func TestPoissonOffsets(t *testing.T) {
	const n, rate = 200_000, 1000.0
	a := poissonOffsets(n, rate, 1)
	b := poissonOffsets(n, rate, 1)
	for i := 1; i < n; i++ {
		if a[i] < a[i-1] || a[i] != b[i] {
			t.Fatalf("offsets not increasing or not replayable at %d", i)
		}
	}
	// Mean gap 1/rate within 1% (seeded: cannot flake).
	if mean := float64(a[n-1]) / float64(n-1) / 1e9; mean < 0.99/rate || mean > 1.01/rate {
		t.Fatalf("mean gap %g s, want %g", mean, 1/rate)
	}
}

// A rate so low that the schedule's last intended start overflows the
// nanoseconds it is kept in is refused: the starts wrapped to negative
// offsets, every op went out at once, and --duration never stopped it.
func TestOpenLoopScheduleBeyondItsRange(t *testing.T) {
	w := genWorkload(t, "hot", 1000)
	_, err := Run(context.Background(), RunConfig{Workers: 2, Rate: 1e-300}, memory.New(), w)
	if err == nil || !strings.Contains(err.Error(), "span") {
		t.Fatalf("1000 ops at 1e-300 ops/s: %v; want a refusal naming the span", err)
	}
	res := runMemory(t, RunConfig{Workers: 2, Rate: 1e6}, w)
	if !res.Check.OK || res.Ops != 1000 {
		t.Fatalf("a fine rate: %d ops, check %+v", res.Ops, res.Check)
	}
}
