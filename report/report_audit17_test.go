package report

import (
	"strings"
	"testing"

	"allot/bench"
)

// A durable run's ops/s is only good or bad against the disk's bound the
// bench measured before it (ops in flight / fdatasync, and / (fdatasync +
// round trip)); the terminal prints it under the table (bench.WriteBounds),
// and the results file keeps it, but the page showed it nowhere: a reader
// choosing a datastore saw 40,189 ops/s with no way to know that the disk
// allowed 130,376.
func TestAudit17DurableRunShownBesideItsBound(t *testing.T) {
	durable := auditRun(t, "embedded", []int64{1000, 2000, 3000, 4000})
	durable.OpsPerSec = 40189
	durable.Bound = &bench.Bound{Dir: "/data", FsyncP50MS: 0.123, FsyncSamples: 300, InProcess: true, Workers: 16, InFlight: 16,
		OpsPerSecFsync: 130376, OpsPerSecFsyncRTT: 130376}
	remote := auditRun(t, "redis", []int64{1000, 2000})
	remote.OpsPerSec = 9000
	remote.Bound = &bench.Bound{Dir: "/data/redis", FsyncP50MS: 0.5, FsyncSamples: 300, RTTP50MS: 0.25, RTTSamples: 2000, Workers: 16, InFlight: 16,
		OpsPerSecFsync: 32000, OpsPerSecFsyncRTT: 21333.3}
	none := auditRun(t, "memory", []int64{1000})
	none.Durability = "none"
	page := render(t, &bench.ResultsFile{Version: bench.ResultsVersion, Runs: []bench.Result{durable, remote, none}})
	i := strings.Index(page, `id="bounds-table"`)
	if i < 0 {
		t.Fatal("the page has no bound for its durable runs")
	}
	table := text(page[i : strings.Index(page[i:], "</table>")+i])
	for _, want := range []string{
		"1 embedded", "0.123 ms", "none (in process)", "130,376 / 130,376 ops/s", "40,189", "31% / 31%",
		"2 redis", "0.5 ms", "0.25 ms", "32,000 / 21,333 ops/s", "9,000", "28% / 42%",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("bound table lacks %q:\n%s", want, table)
		}
	}
	if strings.Contains(table, "memory") {
		t.Errorf("a run with no bound is in the bound table:\n%s", table)
	}
	// A file with no bound has no such section.
	page = render(t, &bench.ResultsFile{Version: bench.ResultsVersion, Runs: []bench.Result{none}})
	if strings.Contains(page, `id="bounds-table"`) {
		t.Error("a bound table on a page with no bound")
	}
}

// A run whose status says its check failed, beside a check field that says
// it passed (a hand-edited or broken file), had "check passed" in the
// checks section under the table's red "check_failed".
func TestAudit17StatusCheckFailedIsNeverCheckPassed(t *testing.T) {
	r := auditRun(t, "redis", []int64{1000, 2000})
	r.Status = bench.StatusCheckFailed
	page := render(t, &bench.ResultsFile{Version: bench.ResultsVersion, Runs: []bench.Result{r}})
	e := checkEntry(t, page, "1")
	if strings.Contains(e, "check passed") || strings.Contains(e, `data-check="ok"`) {
		t.Errorf("a run whose status is check_failed shows its check as passed:\n%s", e)
	}
	if !strings.Contains(e, "check failed") {
		t.Errorf("the entry does not say the check failed:\n%s", e)
	}
	r.Errors = 3
	page = render(t, &bench.ResultsFile{Version: bench.ResultsVersion, Runs: []bench.Result{r}})
	if e := checkEntry(t, page, "1"); strings.Contains(e, "the others passed the check") {
		t.Errorf("a run whose status is check_failed says the others passed the check:\n%s", e)
	}
}

// A throughput series longer than the bench ever writes (it folds seconds
// past bench.ThroughputSecondsMax into the last) made every run of its
// chart that long: a 9 MB file of 51 runs, one with 3 million seconds,
// took 8 GB and wrote a 787 MB page. The series is folded as the bench
// folds it, and a chart of too many counts is left out with a note.
func TestAudit17ThroughputSeriesIsBounded(t *testing.T) {
	long := auditRun(t, "long", []int64{1000, 2000})
	long.Throughput = make([]int64, 3*bench.ThroughputSecondsMax)
	for i := range long.Throughput {
		long.Throughput[i] = 1
	}
	long.Seconds = float64(len(long.Throughput))
	runs := []bench.Result{long}
	for i := range 3 {
		r := auditRun(t, "short", []int64{1000})
		r.Store += itoa(i)
		runs = append(runs, r)
	}
	page := render(t, &bench.ResultsFile{Version: bench.ResultsVersion, Runs: runs})
	cs := pageCharts(t, page)
	if len(cs.Throughput) != 1 {
		t.Fatalf("%d throughput charts, want 1", len(cs.Throughput))
	}
	if n := len(cs.Throughput[0].X); n > bench.ThroughputSecondsMax+1 {
		t.Errorf("throughput chart has %d seconds, more than the %d the bench keeps (and one for a folded end)", n, bench.ThroughputSecondsMax+1)
	}
	for _, s := range cs.Throughput[0].Series {
		if len(s.Y) != len(cs.Throughput[0].X) {
			t.Errorf("series %s has %d points for %d seconds", s.Label, len(s.Y), len(cs.Throughput[0].X))
		}
	}
	// Many runs beside a long one: the chart is left out, with a note.
	long.Throughput = long.Throughput[:bench.ThroughputSecondsMax]
	long.Seconds = float64(bench.ThroughputSecondsMax)
	runs = []bench.Result{long}
	for i := range 200 {
		r := long
		r.Store = "s" + itoa(i)
		r.Throughput = []int64{1}
		r.Histogram = ""
		runs = append(runs, r)
	}
	page = render(t, &bench.ResultsFile{Version: bench.ResultsVersion, Runs: runs})
	if cs := pageCharts(t, page); len(cs.Throughput) != 0 {
		t.Errorf("a throughput chart of %d runs beside an hour-long one was drawn", len(runs)-1)
	}
	if !strings.Contains(page, "per-second values, over the") {
		t.Error("the page does not say why the throughput chart is missing")
	}
}
