package benchsvc

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"allot/bench"
)

// liveSeriesMax is the most points a run's series holds.
const liveSeriesMax = seriesRecentMax + seriesOlderMax

// stepClock is a clock that moves a second at each reading: a run's
// samples are then a second apart however fast the test makes them.
type stepClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *stepClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Second)
	return c.t
}

// endlessJob reports progress until it is cancelled, then one result.
type endlessJob struct {
	result bench.Result // what it reports at the end, Ops set from its progress
}

func (j *endlessJob) Stores() []string { return []string{"embedded"} }
func (j *endlessJob) StoreRuns() int   { return 1 }
func (j *endlessJob) Run(ctx context.Context, progress func(int, bench.Progress), result func(bench.Result)) (string, error) {
	var done int64
	for ctx.Err() == nil {
		done += 7
		progress(0, bench.Progress{Store: "embedded", Done: done, Total: 1 << 40, P99: time.Duration(done%1000) * time.Microsecond, Errors: done / 1000})
		time.Sleep(100 * time.Microsecond)
	}
	res := j.result
	res.Store, res.Status, res.Ops = "embedded", bench.StatusOK, done
	result(res)
	return "table", nil
}

// longRun runs an endless job on s (whose clock is a stepClock) until its
// last sample is at least seconds into the run, cancels it, and returns
// its record.
func longRun(t *testing.T, s *Service, seconds float64) Record {
	t.Helper()
	rec, err := s.Submit(json.RawMessage(`{}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		got, _ := s.Get(rec.ID)
		if n := len(got.Series); n > liveSeriesMax {
			s.Cancel(rec.ID)
			t.Fatalf("the live series holds %d samples %.0f s into the run, want at most %d", n, got.Series[n-1].T, liveSeriesMax)
		}
		if n := len(got.Series); n > 0 && got.Series[n-1].T >= seconds {
			break
		}
		if time.Now().After(deadline) {
			s.Cancel(rec.ID)
			t.Fatalf("the run made no sample %.0f s into it within a minute", seconds)
		}
		time.Sleep(time.Millisecond)
	}
	if _, err := s.Cancel(rec.ID); err != nil {
		t.Fatal(err)
	}
	return waitState(t, s, rec.ID)
}

func newLongRunService(t *testing.T, job Job) *Service {
	t.Helper()
	clock := &stepClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	s, err := New(Config{Parse: func([]string) (Job, error) { return job, nil }, EventInterval: 50 * time.Microsecond, Now: clock.now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestLiveSeriesBoundedAudit13: a run kept every live sample, one a
// second for as long as it ran, in memory, in its record and in the
// replay every event stream of it starts with. Now a run of thousands of
// samples keeps a few hundred points, in time order.
func TestLiveSeriesBoundedAudit13(t *testing.T) {
	s := newLongRunService(t, &endlessJob{})
	rec := longRun(t, s, 4*liveSeriesMax)
	if n := len(rec.Series); n > liveSeriesMax {
		t.Fatalf("the finished run's series holds %d points, want at most %d", n, liveSeriesMax)
	}
	for i := 1; i < len(rec.Series); i++ {
		if rec.Series[i].T <= rec.Series[i-1].T {
			t.Fatalf("series point %d at %v s, after point %d at %v s", i, rec.Series[i].T, i-1, rec.Series[i-1].T)
		}
	}
	if last := rec.Series[len(rec.Series)-1]; last.OpsDone > rec.Results[0].Ops || last.OpsDone == 0 {
		t.Errorf("the last point has done %d ops, the run %d", last.OpsDone, rec.Results[0].Ops)
	}
}

// TestSeriesMergeKeepsTotalsAudit13 feeds a day and a half of samples,
// one a second, to a series: it never holds more than its bound, its
// newest samples stay one by one, its older points each merge as many
// samples (the last at most as many), and what the samples add up to is
// what the points add up to.
func TestSeriesMergeKeepsTotalsAudit13(t *testing.T) {
	const samples = 129_600
	rng := rand.New(rand.NewPCG(13, 13))
	var s series
	var opsSum, done int64
	worstP99 := 0.0
	for i := 1; i <= samples; i++ {
		ops := rng.Int64N(5000)
		done += ops
		p99 := rng.Float64() * 10
		worstP99 = max(worstP99, p99)
		s.add(Event{T: float64(i), Store: "embedded", Ops: ops, OpsPerSec: float64(ops), P99MS: p99, OpsDone: done, Errors: int64(i / 100)})
		opsSum += ops
		if len(s.points) > liveSeriesMax {
			t.Fatalf("after %d samples the series holds %d points, want at most %d", i, len(s.points), liveSeriesMax)
		}
	}
	var got int64
	gotP99 := 0.0
	for i, p := range s.points {
		got += p.Ops
		gotP99 = max(gotP99, p.P99MS)
		if i > 0 && p.Seq <= s.points[i-1].Seq {
			t.Fatalf("point %d has sample number %d after %d", i, p.Seq, s.points[i-1].Seq)
		}
		prevT := 0.0
		if i > 0 {
			prevT = s.points[i-1].T
		}
		if want := float64(p.Ops) / (p.T - prevT); p.OpsPerSec != want {
			t.Fatalf("point %d: %v ops/s, want its %d ops over %v s = %v", i, p.OpsPerSec, p.Ops, p.T-prevT, want)
		}
	}
	if got != opsSum {
		t.Errorf("the points add up to %d ops, the samples to %d", got, opsSum)
	}
	if gotP99 != worstP99 {
		t.Errorf("the worst p99 of the points is %v, of the samples %v", gotP99, worstP99)
	}
	last := s.points[len(s.points)-1]
	if last.Seq != samples || last.OpsDone != done || last.T != samples || last.Errors != samples/100 {
		t.Errorf("the last point %+v, want sample %d with %d ops done", last, samples, done)
	}
	recent := s.points[len(s.points)-seriesRecentMax:]
	for i, p := range recent {
		if want := samples - seriesRecentMax + 1 + i; p.Seq != want {
			t.Fatalf("recent point %d is sample %d, want %d: the newest samples are kept one by one", i, p.Seq, want)
		}
	}
	for i := 0; i < s.older; i++ {
		if n := s.samples(i); n != s.stride && !(i == s.older-1 && n < s.stride) {
			t.Errorf("older point %d merges %d samples, the others %d", i, n, s.stride)
		}
	}
	if s.older < seriesOlderMax/2 {
		t.Errorf("%d older points, want at least %d: the merged part should use its room", s.older, seriesOlderMax/2)
	}
}

// TestResultThroughputBoundedAudit13: a result's per-second counts were
// kept whatever the run's length (search's, and the reservation runner's,
// grow a second at a time). The service keeps an hour of them, later
// seconds folded into the last, so they still add up to the run's ops;
// the job's own result is left as it was.
func TestResultThroughputBoundedAudit13(t *testing.T) {
	counts := make([]int64, 100_000) // 28 hours
	var sum int64
	for i := range counts {
		counts[i] = int64(i%1000 + 1)
		sum += counts[i]
	}
	kept := slices.Clone(counts)
	s := newLongRunService(t, &endlessJob{result: bench.Result{Throughput: counts}})
	rec := longRun(t, s, 3)
	got := rec.Results[0].Throughput
	if len(got) > throughputSecondsMax {
		t.Fatalf("the result keeps %d per-second counts, want at most %d", len(got), throughputSecondsMax)
	}
	var gotSum int64
	for _, n := range got {
		gotSum += n
	}
	if gotSum != sum {
		t.Errorf("the kept counts add up to %d, the run's to %d", gotSum, sum)
	}
	if !slices.Equal(got[:len(got)-1], counts[:len(got)-1]) {
		t.Error("the kept seconds before the last differ from the run's")
	}
	if !slices.Equal(counts, kept) {
		t.Error("the job's own result was changed")
	}
}
