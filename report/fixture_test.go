package report

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"allot/bench"
	"allot/internal/sysinfo"
)

// fixtureHistogram records n synthetic latencies in µs around medianUS, with
// a tail, from a fixed seed, and encodes them as bench does.
func fixtureHistogram(t testing.TB, seed uint64, n int, medianUS float64) string {
	t.Helper()
	h := hdrhistogram.New(1, 60_000_000, 3)
	rng := rand.New(rand.NewPCG(seed, 1))
	for i := 0; i < n; i++ {
		v := medianUS * rng.ExpFloat64()
		if rng.IntN(1000) == 0 {
			v *= 20 // a tail, as stalls make
		}
		if err := h.RecordValue(int64(v) + 1); err != nil {
			t.Fatal(err)
		}
	}
	b, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func fixtureThroughput(seed uint64, seconds int, rate float64) []int64 {
	rng := rand.New(rand.NewPCG(seed, 2))
	out := make([]int64, seconds)
	for i := range out {
		out[i] = int64(rate * (0.9 + 0.2*rng.Float64()))
	}
	out[seconds-1] /= 3 // the partial last second
	return out
}

// fixtureRun builds one run of a hand-made results file. The figures are
// made up for tests: they exercise the report, they measure nothing.
func fixtureRun(t testing.TB, store string, seed uint64, opsPerSec, medianUS float64) bench.Result {
	seconds := float64(4 + seed%4)
	ops := int(opsPerSec * seconds)
	samples := min(ops, 50_000) // enough for the spectrum, quick to record
	return bench.Result{
		Store:         store,
		Description:   store + " test server 1.0, durability fsync",
		Workload:      bench.WorkloadInfo{Name: "hot", Rows: 20, Ops: ops, Seed: 1, SKUs: 5},
		Workers:       16,
		Durability:    "fsync",
		Pipeline:      1,
		Mode:          "closed",
		Started:       time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Status:        bench.StatusOK,
		Ops:           int64(ops),
		Seconds:       seconds,
		OpsPerSec:     opsPerSec,
		LatencyMS:     bench.Latency{P50: medianUS * 0.7 / 1000, P99: medianUS * 4.6 / 1000, P999: medianUS * 7 / 1000, Max: medianUS * 60 / 1000},
		Retries:       int64(seed * 3),
		Check:         bench.CheckResult{OK: true, Violations: []string{}},
		Throughput:    fixtureThroughput(seed, int(seconds)+1, opsPerSec),
		Histogram:     fixtureHistogram(t, seed, samples, medianUS),
		HistogramUnit: "us",
	}
}

// fixtureResults is a results file with several stores, a failed check, an
// open-loop run, a workers sweep and an open-loop rate sweep.
func fixtureResults(t testing.TB) *bench.ResultsFile {
	env, err := json.Marshal(sysinfo.Env{CPUModel: "Test CPU", Cores: 2, GOMAXPROCS: 2, MemoryBytes: 8 << 30,
		OS: "Test OS", Arch: "linux/amd64", Kernel: "6.1.0-test", GoVersion: "go1.26.8", AllotCommit: "0123456789abcdef0123456789abcdef01234567",
		LoadAverage: [3]float64{2.5, 1.25, 0.5}})
	if err != nil {
		t.Fatal(err)
	}
	f := &bench.ResultsFile{
		Version:     bench.ResultsVersion,
		Started:     time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Command:     []string{"allot", "bench", "--stores", "memory,embedded,postgres,redis,naive"},
		Environment: env,
	}
	f.Runs = append(f.Runs,
		fixtureRun(t, "memory", 1, 900_000, 15),
		fixtureRun(t, "embedded", 2, 120_000, 120),
		fixtureRun(t, "postgres", 3, 2_500, 6_000),
		fixtureRun(t, "redis", 4, 30_000, 500),
	)
	naive := fixtureRun(t, "naive", 5, 200_000, 60)
	naive.Status = bench.StatusCheckFailed
	naive.Check = bench.CheckResult{OK: false, ViolationCount: 3, Violations: []string{
		"group (sku-1,new,own): final total -2, want 0", "row (sku-1,w1,new,own) count -2 below zero"}}
	f.Runs = append(f.Runs, naive)

	open := fixtureRun(t, "embedded", 6, 5_000, 200)
	open.Mode = "open"
	open.OpenLoop = &bench.OpenLoop{Rate: 5000, Arrival: "poisson", ResponseMS: open.LatencyMS,
		ServiceMS: bench.Latency{P50: 0.1, P99: 0.4, P999: 0.6, Max: 3}, ServiceHistogram: fixtureHistogram(t, 7, 20_000, 100),
		LateOps: 12, LateThresholdMS: 1, LatenessMaxMS: 4.2}
	f.Runs = append(f.Runs, open)

	for i, w := range []int{1, 4, 16, 64} {
		for j, s := range []struct {
			store string
			ops   float64
		}{{"embedded", 40_000}, {"redis", 12_000}, {"postgres", 900}} {
			r := fixtureRun(t, s.store, uint64(10+i*3+j), s.ops*float64(w)/(1+float64(w)/8), 100*float64(j+1)*float64(w))
			r.Workers = w
			r.Sweep = &bench.SweepPoint{Param: "workers", Value: float64(w), Label: "workers=" + itoa(w)}
			f.Runs = append(f.Runs, r)
		}
	}
	for i, rate := range []float64{1000, 5000} {
		r := fixtureRun(t, "embedded", uint64(30+i), rate, 150*float64(i+1))
		r.Mode = "open"
		r.OpenLoop = &bench.OpenLoop{Rate: rate, Arrival: "constant", ResponseMS: r.LatencyMS,
			ServiceMS: bench.Latency{P50: 0.1, P99: 0.3 * float64(i+1), P999: 0.5, Max: 2}, ServiceHistogram: fixtureHistogram(t, uint64(40+i), 5_000, 90)}
		r.Sweep = &bench.SweepPoint{Param: "rate", Value: rate, Label: "rate=" + itoa(int(rate))}
		f.Runs = append(f.Runs, r)
	}
	return f
}

func itoa(n int) string { return intText(int64(n)) }
