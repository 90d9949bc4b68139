package report

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"allot/bench"
	"allot/internal/sysinfo"
	"allot/store/memory"
	"allot/workload"
)

// realResults runs the hot workload on the in-process memory store (the
// bench's baseline, so the test needs no server): a closed-loop workers
// sweep and one open-loop run, the shapes `allot bench --out` writes. Only
// the test imports a store; the report package itself never does.
func realResults(t *testing.T) *bench.ResultsFile {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	params, err := workload.Preset("hot")
	if err != nil {
		t.Fatal(err)
	}
	params.Ops = 20_000
	w, err := workload.Generate(params)
	if err != nil {
		t.Fatal(err)
	}
	env, err := json.Marshal(sysinfo.Collect(ctx))
	if err != nil {
		t.Fatal(err)
	}
	f := &bench.ResultsFile{Version: bench.ResultsVersion, Started: time.Now().UTC(),
		Command: []string{"go", "test", "./report"}, Environment: env}
	configs := []bench.RunConfig{
		{Workers: 1, Sweep: &bench.SweepPoint{Param: "workers", Value: 1, Label: "workers=1"}},
		{Workers: 4, Sweep: &bench.SweepPoint{Param: "workers", Value: 4, Label: "workers=4"}},
		// 20,000 ops at 10,000/s: two seconds, far below what the memory
		// store sustains, so the open loop keeps its schedule.
		{Workers: 4, Rate: 10_000, Arrival: bench.ArrivalPoisson},
	}
	for _, cfg := range configs {
		cfg.Store = "memory"
		res, err := bench.Run(ctx, cfg, memory.New(), w)
		if err != nil {
			t.Fatalf("bench.Run(%+v): %v", cfg, err)
		}
		if res.Status != bench.StatusOK {
			t.Fatalf("memory run %+v: status %s: %s %v", cfg, res.Status, res.Error, res.Check.Violations)
		}
		f.Runs = append(f.Runs, *res)
	}
	return f
}

func TestRealRunReport(t *testing.T) {
	f := realResults(t)
	page := render(t, f)
	m := dataRE.FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no chart data")
	}
	var cs chartSetJSON
	if err := json.Unmarshal([]byte(m[1]), &cs); err != nil {
		t.Fatal(err)
	}
	// Every run recorded a histogram, and its spectrum ends at the run's
	// maximum latency, which the bench also reports.
	for _, c := range cs.Spectrum {
		for _, s := range c.Series {
			var last float64
			for _, y := range s.Y {
				if y != nil {
					last = *y
				}
			}
			if last <= 0 {
				t.Errorf("spectrum %s series %q has no points", c.ID, s.Label)
			}
		}
	}
	for i, r := range f.Runs {
		if len(r.Throughput) == 0 || r.Histogram == "" {
			t.Errorf("run %d has no throughput series or histogram", i+1)
		}
	}
	for _, want := range []string{"memory", "workers=1", "open 10,000/s poisson", sysinfo.Collect(context.Background()).GoVersion,
		"Workload of every run: <strong>hot, 20 rows, 20,000 ops (seed 1, 5 SKUs)</strong>"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

func TestRealRunDrawsInChromium(t *testing.T) {
	bin := chromium(t)
	f := realResults(t)
	// All runs, two workers points: a throughput and a spectrum chart each;
	// two sweep curves.
	want := 2*3 + 2
	checkDrawn(t, bin, writePage(t, keepDir(t), "real-memory.html", f), want)
}

// chartSetJSON is the chart data as the page's script sees it.
type chartSetJSON struct {
	Throughput, Spectrum, Sweeps []struct {
		ID     string
		X      []*float64
		Series []struct {
			Label string
			Y     []*float64
		}
	}
}
