package report

import (
	"strings"
	"testing"

	"allot/bench"
)

func TestReportShowsServerCost(t *testing.T) {
	f := fixtureResults(t)
	if out := render(t, f); strings.Contains(out, "Server CPU<br>µs/op") {
		t.Error("server columns without any measured run")
	}
	f.Runs[0].Server = &bench.ServerUsage{PID: 42, Processes: 3, CPUSeconds: 1.5, CPUMicrosPerOp: 12.26, RSSPeakBytes: 300 << 20, Span: bench.SpanRun}
	out := render(t, f)
	for _, want := range []string{"Server CPU<br>µs/op", ">12.3<", ">1.50<", ">300<", "pid 42, 3 processes; the whole store run"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}
