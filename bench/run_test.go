package bench

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"allot/inventory"
	"allot/store"
	"allot/store/memory"
	"allot/workload"
)

func TestRunMemoryPresets(t *testing.T) {
	for _, preset := range workload.PresetNames {
		t.Run(preset, func(t *testing.T) {
			w := genWorkload(t, preset, 50_000)
			res := runMemory(t, RunConfig{Workers: 8, Store: "memory"}, w)
			if res.Status != StatusOK || !res.Check.OK {
				t.Fatalf("status %s, check %+v", res.Status, res.Check)
			}
			if res.Ops != int64(len(w.Ops)) || res.Errors != 0 {
				t.Fatalf("ops %d errors %d, want %d and 0", res.Ops, res.Errors, len(w.Ops))
			}
			var sum int64
			for _, n := range res.Throughput {
				sum += n
			}
			if sum != res.Ops {
				t.Fatalf("throughput series sums to %d, ops %d", sum, res.Ops)
			}
			h, err := hdrhistogram.Decode([]byte(res.Histogram))
			if err != nil {
				t.Fatal(err)
			}
			// One sample per store call: every op, plus every stock retry.
			if h.TotalCount() != res.Ops+res.Retries {
				t.Fatalf("histogram holds %d samples, want ops %d + retries %d", h.TotalCount(), res.Ops, res.Retries)
			}
			l := res.LatencyMS
			if !(0 < l.P50 && l.P50 <= l.P99 && l.P99 <= l.P999 && l.P999 <= l.Max) {
				t.Fatalf("latency percentiles out of order: %+v", l)
			}
			if res.Workload.Name != preset || res.Workload.Ops != len(w.Ops) || res.Store != "memory" || res.Mode != "closed" || res.HistogramUnit != "ns" {
				t.Fatalf("labels: %+v", res)
			}
		})
	}
}

// TestRunStockRetries: on the hot preset with many workers, captures
// overtake the releases they depend on; the runner must retry them, count
// the retries, and still pass the check.
func TestRunStockRetries(t *testing.T) {
	w := genWorkload(t, "hot", 20_000)
	res := runMemory(t, RunConfig{Workers: 32, RetryDelay: 50 * time.Microsecond}, w)
	if !res.Check.OK || res.Errors != 0 {
		t.Fatalf("check %+v errors %d %v", res.Check, res.Errors, res.ErrorSamples)
	}
	t.Logf("hot preset, 32 workers: %d stock retries", res.Retries)
}

func TestRunRetryMaxThenError(t *testing.T) {
	k := inventory.RowKey{SKU: "s", Warehouse: "w1", Condition: "c", Source: "o"}
	w := &workload.Workload{
		Params:  workload.Params{Name: "t", Rows: 1, SKUs: 1, Warehouses: 1, Conditions: 1, Sources: 1, Ops: 2},
		Initial: []inventory.Row{{Key: k, Count: 1}},
		Ops: []workload.Op{
			{Kind: inventory.KindCapture, Key: inventory.RowKey{SKU: "s", Condition: "c", Source: "o"}, N: 2},
			{Kind: inventory.KindRelease, Key: k, N: 1},
		},
	}
	res := runMemory(t, RunConfig{Workers: 1, RetryDelay: time.Microsecond, RetryMax: 3}, w)
	if res.Retries != 3 || res.Errors != 1 || !res.Check.OK {
		t.Fatalf("retries %d errors %d check %+v, want 3, 1 and a passing check", res.Retries, res.Errors, res.Check)
	}
	if len(res.ErrorSamples) != 1 || !strings.Contains(res.ErrorSamples[0], "still insufficient") {
		t.Fatalf("error samples %q", res.ErrorSamples)
	}
}

// TestRunSessionErrors: an error from a session is an error, not a retry,
// and the checker allows for the op having been applied or not.
func TestRunSessionErrors(t *testing.T) {
	w := genWorkload(t, "seed", 5000)
	var calls int
	boom := errors.New("connection reset")
	st := &faulty{Store: memory.New(), release: func(se store.Session, ctx context.Context, k inventory.RowKey, n int64) (inventory.Result, error) {
		calls++
		res, err := se.Release(ctx, k, n)
		if calls%100 == 0 {
			return inventory.Result{}, boom // applied, but the reply was lost
		}
		return res, err
	}}
	res := runOn(t, RunConfig{Workers: 1}, st, w)
	if res.Errors == 0 || res.Retries != 0 || !res.Check.OK {
		t.Fatalf("errors %d retries %d check %+v", res.Errors, res.Retries, res.Check)
	}
	if !strings.Contains(res.ErrorSamples[0], "connection reset") {
		t.Fatalf("error samples %q", res.ErrorSamples)
	}
}

func TestRunConflictRetries(t *testing.T) {
	w := genWorkload(t, "seed", 2000)
	res := runOn(t, RunConfig{Workers: 4}, conflictingStore{memory.New()}, w)
	var captures int64
	for _, op := range w.Ops {
		if op.Kind == inventory.KindCapture {
			captures++
		}
	}
	if res.ConflictRetries != captures+res.Retries {
		t.Fatalf("conflict retries %d, want one per capture call (%d + %d)", res.ConflictRetries, captures, res.Retries)
	}
}

// TestRunDurationBound: a --duration bound stops the run early, and the
// check holds for the ops that ran.
func TestRunDurationBound(t *testing.T) {
	w := genWorkload(t, "seed", 100_000)
	slow := &faulty{Store: memory.New(), release: func(se store.Session, ctx context.Context, k inventory.RowKey, n int64) (inventory.Result, error) {
		time.Sleep(time.Millisecond)
		return se.Release(ctx, k, n)
	}}
	res := runOn(t, RunConfig{Workers: 4, Duration: 300 * time.Millisecond}, slow, w)
	if res.Ops == 0 || res.Ops >= int64(len(w.Ops)) || !res.Check.OK {
		t.Fatalf("ops %d of %d, check %+v: want a partial run that checks", res.Ops, len(w.Ops), res.Check)
	}
}

func TestRunCancel(t *testing.T) {
	w := genWorkload(t, "seed", 100_000)
	ctx, cancel := context.WithCancel(context.Background())
	slow := &faulty{Store: memory.New(), release: func(se store.Session, c context.Context, k inventory.RowKey, n int64) (inventory.Result, error) {
		cancel()
		return se.Release(c, k, n)
	}}
	if _, err := Run(ctx, RunConfig{Workers: 2}, slow, w); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run after cancel: %v, want context.Canceled", err)
	}
}

func TestRunConfigValidate(t *testing.T) {
	for _, cfg := range []RunConfig{
		{Workers: -1},
		{Workers: WorkersMax + 1},
		{RetryDelay: -time.Second},
		{Duration: -1},
		{Rate: -5},
		{Rate: 10, Arrival: "bursty"},
	} {
		if err := cfg.Validate(); err == nil {
			t.Errorf("Validate accepted %+v", cfg)
		}
	}
	var cfg RunConfig
	if err := cfg.Validate(); err != nil || cfg.Workers != 16 || cfg.RetryDelay != 5*time.Millisecond || cfg.RetryMax != RetryMaxDefault {
		t.Fatalf("defaults: %v %+v", err, cfg)
	}
}

func TestPlanRejectsUnknownRows(t *testing.T) {
	w := genWorkload(t, "hot", 10)
	w.Ops[0] = workload.Op{Kind: inventory.KindRelease, Key: inventory.RowKey{SKU: "x", Warehouse: "w", Condition: "c", Source: "s"}, N: 1}
	if _, err := NewPlan(w); err == nil || !strings.Contains(err.Error(), "op 1") {
		t.Fatalf("NewPlan: %v", err)
	}
}

// TestExecAllocatesNothing: the per-op path of the runner (take, call,
// time, record) allocates nothing on the memory store, so the baseline
// measures the harness, not the garbage collector.
func TestExecAllocatesNothing(t *testing.T) {
	r, wk, _ := oneWorker(t, genWorkload(t, "seed", 20_000))
	ctx := context.Background()
	allocs := testing.AllocsPerRun(10_000, func() {
		i := r.take()
		wk.exec(ctx, i, true)
		wk.done.n.Add(1)
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per op", allocs)
	}
	if wk.retries != 0 || wk.errors != 0 {
		t.Fatalf("retries %d errors %d replaying in order on one worker", wk.retries, wk.errors)
	}
}
