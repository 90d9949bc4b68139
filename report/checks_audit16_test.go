package report

import (
	"strings"
	"testing"

	"allot/bench"
)

// A run that never happened (its store could not be opened, or its server
// was down) was never checked: the terminal says "check: NOT RUN". Its
// entry in the checks section said "check failed", the verdict of a
// checker that found overselling, beside a server that was merely down.
func TestAudit16ChecksSectionSaysARunThatNeverRanWasNotChecked(t *testing.T) {
	ok := auditRun(t, "memory", []int64{1000, 2000, 3000})
	down := bench.Result{Store: "tarantool", Status: bench.StatusServerDown, Workers: 16, Mode: "closed",
		Error: "store: server is not reachable", Check: bench.CheckResult{Violations: []string{}}}
	failed := bench.Result{Store: "postgres", Status: bench.StatusFailed, Workers: 16, Mode: "closed",
		Error: "bench: loading rows: connection reset", Check: bench.CheckResult{Violations: []string{}}}
	page := render(t, &bench.ResultsFile{Version: bench.ResultsVersion, Runs: []bench.Result{ok, down, failed}})
	for _, n := range []string{"2", "3"} {
		e := checkEntry(t, page, n)
		if strings.Contains(e, "check failed") || strings.Contains(e, `data-check="failed"`) || strings.Contains(e, "check passed") {
			t.Errorf("run %s never ran, and its check entry gives a verdict:\n%s", n, e)
		}
		if !strings.Contains(text(e), "check not run") {
			t.Errorf("run %s: the check entry does not say the check was not run:\n%s", n, e)
		}
		if !strings.Contains(e, `<span class="pill bad">status: `) {
			t.Errorf("run %s: the failed status is not shown:\n%s", n, e)
		}
	}
	if e := checkEntry(t, page, "1"); !strings.Contains(e, "check passed") {
		t.Errorf("run 1 passed:\n%s", e)
	}
	if !strings.Contains(page, `id="failed-banner">2 of 3 runs did not pass`) {
		t.Error("the banner does not count the two runs that never ran")
	}
}
