package report

import (
	"math"
	"regexp"
	"strings"
	"testing"

	"allot/bench"
)

// checkEntry returns the checks-section entry of run n of a rendered page.
func checkEntry(t *testing.T, page string, n string) string {
	t.Helper()
	m := regexp.MustCompile(`(?s)<div class="check" data-run="` + n + `".*?\n</div>`).FindString(page)
	if m == "" {
		t.Fatalf("no check entry for run %s", n)
	}
	return m
}

// A run whose check passed but some of whose ops failed is failed for the
// bench (the table's "FAILED (errors)", the exit code, the JSON's
// "failed"): its entry in the checks section said "check passed".
func TestAudit12ChecksSectionDoesNotPassARunWhoseOpsFailed(t *testing.T) {
	r := auditRun(t, "postgres", []int64{1000, 2000, 3000})
	r.Errors = 2
	r.ErrorSamples = []string{"op 7: capture of 2: connection reset"}
	page := render(t, &bench.ResultsFile{Version: bench.ResultsVersion, Runs: []bench.Result{r}})
	e := checkEntry(t, page, "1")
	if strings.Contains(e, "check passed") || strings.Contains(e, `data-check="ok"`) {
		t.Errorf("the checks entry of a run with 2 failed ops reads as passed:\n%s", e)
	}
	if !strings.Contains(text(e), "2 ops failed") {
		t.Errorf("the checks entry does not say how many ops failed:\n%s", e)
	}
}

// The published comparison called a pipeline-64 run of the seed preset
// the "same workload" as the published figures, measured one op in flight
// per thread. Same workload needs depth 1, the label names the depth, and
// the comparison table shows a pipeline column when any run is deeper.
func TestAudit12PipelinedRunIsNotThePublishedWorkload(t *testing.T) {
	r := bench.Result{Store: "redis", Status: bench.StatusOK, Workers: 16, Pipeline: 64, Mode: "closed", Durability: "fsync",
		Ops: 1_000_000, OpsPerSec: 400_000, Workload: bench.WorkloadInfo{Name: "seed", Ops: 1_000_000}, Check: bench.CheckResult{OK: true}}
	runs := []bench.Result{r}
	v := newPublishedView(runs, runLabels(runs, ""))
	for _, row := range v.Rows {
		if row.Datastore != "Redis with Lua scripts" {
			continue
		}
		if !row.HasMeasured || row.Same {
			t.Errorf("Redis row %+v: a pipeline-64 run is shown as the same workload", row)
		}
		if !strings.Contains(row.MeasuredLabel, "pipeline 64") {
			t.Errorf("measured label %q does not name the pipeline depth", row.MeasuredLabel)
		}
	}
	depth1 := r
	depth1.Pipeline = 1
	if !sameAsPublished(&depth1) {
		t.Error("the same run at depth 1 is not the published workload")
	}

	withDepth := auditRun(t, "redis", []int64{1000, 2000})
	withDepth.Pipeline = 64
	page := render(t, &bench.ResultsFile{Version: bench.ResultsVersion, Runs: []bench.Result{auditRun(t, "allot", []int64{1000, 2000}), withDepth}})
	table := regexp.MustCompile(`(?s)<table id="comparison">.*?</table>`).FindString(page)
	if !strings.Contains(table, "<th class=\"num\">Pipeline</th>") {
		t.Fatalf("no Pipeline column with a run at depth 64:\n%s", table)
	}
	if !regexp.MustCompile(`data-run="2".*<td class="num">64</td>`).MatchString(table) {
		t.Errorf("the depth-64 run's row does not show 64:\n%s", table)
	}
	page = render(t, &bench.ResultsFile{Version: bench.ResultsVersion, Runs: []bench.Result{auditRun(t, "allot", []int64{1000, 2000})}})
	if strings.Contains(page, ">Pipeline</th>") {
		t.Error("a Pipeline column with every run at depth 1")
	}
}

// Sweep curves plotted runs that failed their check or had ops fail,
// though the caption says a missing point is a run that failed.
func TestAudit12SweepCurvesLeaveOutFailedRuns(t *testing.T) {
	sw, err := bench.ParseSweep("workers=1,4,16")
	if err != nil {
		t.Fatal(err)
	}
	var runs []bench.Result
	for i := range 3 {
		r := auditRun(t, "postgres", []int64{1000, 2000, 3000})
		r.Sweep = sw.Point(i)
		r.Workers = int(r.Sweep.Value)
		r.OpsPerSec = float64(1000 * (i + 1))
		r.LatencyMS.P99 = float64(i + 1)
		runs = append(runs, r)
	}
	runs[1].Status = bench.StatusCheckFailed
	runs[1].Check = bench.CheckResult{ViolationCount: 1, Violations: []string{"row below zero"}}
	runs[2].Errors = 5
	f := &bench.ResultsFile{Version: bench.ResultsVersion, Runs: runs}
	cs := newChartSet(f, storeColors(runs))
	if len(cs.Sweeps) == 0 {
		t.Fatal("no sweep chart")
	}
	for _, c := range cs.Sweeps {
		for _, s := range c.Series {
			if len(s.Y) != 3 || math.IsNaN(s.Y[0]) {
				t.Errorf("%s %s: %v: the passing run at workers=1 is not plotted", c.ID, s.Label, s.Y)
			}
			if len(s.Y) == 3 && (!math.IsNaN(s.Y[1]) || !math.IsNaN(s.Y[2])) {
				t.Errorf("%s %s: %v: a run that failed its check (workers=4) or had ops fail (workers=16) is plotted", c.ID, s.Label, s.Y)
			}
		}
	}
}

// The checks section shows the figures a kind keeps in Extra that a pass
// must not hide, as the terminal's notes do (bench.ExtraNotes).
func TestAudit12ChecksSectionShowsExtraNotes(t *testing.T) {
	r := auditRun(t, "postgres", []int64{1000, 2000, 3000})
	r.Workload.Name = "rw/MODIFY"
	r.Ops = 20000
	r.Extra = map[string]any{"lost_updates": 11192.0, "updates_acknowledged": 20000.0, "records_with_lost_updates": 100.0}
	page := render(t, &bench.ResultsFile{Version: bench.ResultsVersion, Runs: []bench.Result{r}})
	e := text(checkEntry(t, page, "1"))
	if !strings.Contains(e, "11192 of 20000 acknowledged updates lost, on 100 records (extra.lost_updates)") {
		t.Errorf("the checks entry of a run that lost 11192 updates does not say so:\n%s", e)
	}
}
