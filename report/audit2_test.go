package report

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"allot/bench"
)

// pageCharts decodes the chart data of a rendered page.
func pageCharts(t *testing.T, page string) chartSetJSON {
	t.Helper()
	var cs chartSetJSON
	if err := json.Unmarshal([]byte(dataRE.FindStringSubmatch(page)[1]), &cs); err != nil {
		t.Fatal(err)
	}
	return cs
}

// auditRun is a run that passed, with a histogram of the given nanosecond
// samples and the exact maximum beside it, as bench writes them.
func auditRun(t *testing.T, store string, samples []int64) bench.Result {
	t.Helper()
	h := hdrhistogram.New(1, 1<<40, 3)
	var maxNS int64
	for _, v := range samples {
		if err := h.RecordValue(v); err != nil {
			t.Fatal(err)
		}
		maxNS = max(maxNS, v)
	}
	enc, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		t.Fatal(err)
	}
	return bench.Result{
		Store: store, Workload: bench.WorkloadInfo{Name: "seed", Rows: 1000, Ops: len(samples), Seed: 1},
		Workers: 4, Durability: "fsync", Pipeline: 1, Mode: "closed", Status: bench.StatusOK,
		Ops: int64(len(samples)), Seconds: 2, OpsPerSec: float64(len(samples)) / 2,
		LatencyMS:  bench.Latency{Max: float64(maxNS) / 1e6},
		Check:      bench.CheckResult{OK: true, Violations: []string{}},
		Throughput: []int64{int64(len(samples)) / 2, int64(len(samples)) / 2},
		Histogram:  string(enc), HistogramUnit: "ns",
	}
}

// The spectrum ends at the run's maximum, the one the table shows, and
// never rises above it. The histogram alone knows the maximum only as the
// top of its bucket: the curve ended up to 0.1% above the table's max, and
// its 99.9% point above the table's p99.9.
func TestAuditSpectrumEndsAtTheTablesMax(t *testing.T) {
	samples := make([]int64, 1000)
	for i := range samples {
		samples[i] = 1_000_000 + int64(i) // 1.000000 .. 1.000999 ms
	}
	r := auditRun(t, "memory", samples)
	// The chart data holds six significant digits.
	maxMS, _ := strconv.ParseFloat(strconv.FormatFloat(r.LatencyMS.Max, 'g', 6, 64), 64)
	f := &bench.ResultsFile{Version: bench.ResultsVersion, Runs: []bench.Result{r}}
	cs := pageCharts(t, render(t, f))
	if len(cs.Spectrum) != 1 || len(cs.Spectrum[0].Series) != 1 {
		t.Fatalf("spectrum charts %+v", cs.Spectrum)
	}
	ys := cs.Spectrum[0].Series[0].Y
	var last float64
	for i, y := range ys {
		if y == nil {
			continue
		}
		last = *y
		if *y > maxMS {
			t.Errorf("at %.4g%%: %v ms, above the run's max %v ms", percentileOf(*cs.Spectrum[0].X[i]), *y, maxMS)
		}
	}
	if last != maxMS {
		t.Errorf("the curve ends at %v ms, the table's max is %v ms", last, maxMS)
	}
}

// A rows sweep run over two presets: at each point the seed run and the
// hot run of one store are told apart by their workload. The workload
// name is not what a rows sweep varies (the row count is, and the point
// label names it), so leaving it out of the labels made them "memory #1"
// and "memory #2".
func TestAuditRowsSweepKeepsWorkloadNames(t *testing.T) {
	var runs []bench.Result
	for _, rows := range []float64{100, 1000} {
		for _, name := range []string{"seed", "hot"} {
			r := auditRun(t, "memory", []int64{1000, 2000, 3000})
			r.Workload.Name = name
			r.Workload.Rows = int(rows)
			sw, err := bench.ParseSweep("rows=100,1000")
			if err != nil {
				t.Fatal(err)
			}
			if rows == 100 {
				r.Sweep = sw.Point(0)
			} else {
				r.Sweep = sw.Point(1)
			}
			runs = append(runs, r)
		}
	}
	f := &bench.ResultsFile{Version: bench.ResultsVersion, Runs: runs}
	cs := pageCharts(t, render(t, f))
	check := func(kind string, labels []string) {
		t.Helper()
		joined := strings.Join(labels, " | ")
		if strings.Contains(joined, "#") || !strings.Contains(joined, "seed") || !strings.Contains(joined, "hot") {
			t.Errorf("%s series %q: the seed and hot runs are not named by their workload", kind, labels)
		}
	}
	for _, c := range cs.Throughput {
		var labels []string
		for _, s := range c.Series {
			labels = append(labels, s.Label)
		}
		check(c.ID, labels)
	}
	for _, c := range cs.Sweeps {
		var labels []string
		for _, s := range c.Series {
			labels = append(labels, s.Label)
		}
		check(c.ID, labels)
	}
}

// A run whose check passed but some of whose ops failed is a failed run
// for the bench (its table says "FAILED (errors)", its exit code is
// non-zero): the page must not call it ok, must not say every run passed,
// and must not put it beside the published figures as the store's result.
func TestAuditRunWithFailedOpsIsNotShownAsPassed(t *testing.T) {
	r := auditRun(t, "postgres", []int64{1000, 2000, 3000})
	r.Errors = 2
	r.ErrorSamples = []string{"op 7: capture of 2: connection reset", "op 9: release of 1: connection reset"}
	if !r.Failed() {
		t.Fatal("the bench does not count this run as failed")
	}
	f := &bench.ResultsFile{Version: bench.ResultsVersion, Runs: []bench.Result{r}}
	page := render(t, f)
	if strings.Contains(page, "Every run finished and passed its check") {
		t.Error("the banner says every run passed")
	}
	if !strings.Contains(page, `id="failed-banner"`) {
		t.Error("no failed-run banner")
	}
	if strings.Contains(page, `<span class="pill ok">ok</span>`) {
		t.Error("the run's status reads ok")
	}
	v := newPublishedView(f.Runs, runLabels(f.Runs, ""))
	for _, row := range v.Rows {
		if row.HasMeasured {
			t.Errorf("published row %q shows the failed run's %s ops/s as measured", row.Datastore, row.Measured)
		}
	}
}

// Latencies in the page's table read as plain milliseconds at every scale:
// 'g' formatting turned a 45 ns call into "4.5e-05".
func TestAuditMillisecondsNotInExponentForm(t *testing.T) {
	for _, tt := range []struct {
		ms   float64
		want string
	}{{0.000045, "0.000045"}, {0.0000123, "0.0000123"}, {0.000234, "0.000234"}, {0.0123, "0.0123"}, {1.5, "1.5"}, {99.94, "99.9"}} {
		if got := msText(tt.ms); got != tt.want {
			t.Errorf("msText(%v) = %q, want %q", tt.ms, got, tt.want)
		}
	}
}

// A run that never ran (server down, store failed to open) has no figures:
// its row says so with dashes, as the terminal table does, instead of
// 0 ops/s and a latency of 0 ms beside the runs that did run.
func TestAuditRunThatDidNotRunHasNoFigures(t *testing.T) {
	ok := auditRun(t, "memory", []int64{1000, 2000, 3000})
	down := bench.Result{Store: "tarantool", Status: bench.StatusServerDown, Workers: 16, Durability: "fsync", Pipeline: 1, Mode: "closed",
		Error: "store: server is not reachable", Check: bench.CheckResult{Violations: []string{}}}
	failed := down
	failed.Store, failed.Status, failed.Error = "postgres", bench.StatusFailed, "bench: loading 1000 rows: timeout"
	page := render(t, &bench.ResultsFile{Version: bench.ResultsVersion, Runs: []bench.Result{ok, down, failed}})
	rows := regexp.MustCompile(`(?s)<tr data-run="(\d)"[^>]*>(.*?)</tr>`).FindAllStringSubmatch(page, -1)
	if len(rows) != 3 {
		t.Fatalf("%d rows in the comparison table", len(rows))
	}
	for _, row := range rows[1:] {
		cells := regexp.MustCompile(`<td class="num"[^>]*>([^<]*)</td>`).FindAllStringSubmatch(row[2], -1)
		for _, c := range cells[2:] { // past the run number and the workers
			if c[1] != "–" {
				t.Errorf("run %s: a figure cell reads %q, want –", row[1], c[1])
			}
		}
	}
}
