package report

import (
	"strings"
	"testing"

	"allot/bench"
)

// A results file is input: one whose run says "status": "ok" beside a
// check that did not pass ("check": {"ok": false, ...}: hand-edited, or
// written by a broken tool) drew a green banner ("Every run finished and
// passed its check: no unit oversold"), an "ok" pill in the table and the
// run's figure beside the published ones, while the checks section listed
// its violations. The page must not call a run passed that its own check
// entry calls failed.
func TestAudit16StatusOKWithAFailedCheckIsNotAPass(t *testing.T) {
	r := auditRun(t, "redis", []int64{1000, 2000, 3000})
	r.Check = bench.CheckResult{OK: false, ViolationCount: 1, Violations: []string{"group 3: final total 7, want 9"}}
	r.Sweep = &bench.SweepPoint{Param: "workers", Value: 4, Label: "workers=4"}
	page := render(t, &bench.ResultsFile{Version: bench.ResultsVersion, Runs: []bench.Result{r}})
	if strings.Contains(page, `<div class="banner ok">`) || !strings.Contains(page, `id="failed-banner">1 of 1 runs did not pass`) {
		t.Error("the banner says every run passed")
	}
	if strings.Contains(page, `<span class="pill ok">ok</span>`) || !strings.Contains(page, `<span class="pill bad">check_failed</span>`) {
		t.Error("the comparison table calls the run ok")
	}
	if row := publishedRowOf(t, []bench.Result{r}, "Redis with Lua scripts"); row.HasMeasured || !row.Unpassed {
		t.Errorf("the run is measured beside the published figure: %+v", row)
	}
	cs := pageCharts(t, page)
	for _, c := range cs.Sweeps {
		for _, s := range c.Series {
			for _, y := range s.Y {
				if y != nil {
					t.Errorf("sweep %s draws the run as a point of its curve", c.ID)
				}
			}
		}
	}
	for _, c := range cs.Spectrum {
		for _, s := range c.Series {
			if !strings.HasSuffix(s.Label, failedMark) {
				t.Errorf("spectrum label %q does not say the run did not pass", s.Label)
			}
		}
	}
}
