package benchsvc

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// harnessPage is what testdata/page_harness.js prints of the page.
type harnessPage struct {
	T          []float64 `json:"t"`
	PointsMax  int       `json:"pointsMax"`
	State      string    `json:"state"`
	Reconnects int       `json:"reconnects"`
	CatchUps   int       `json:"catchUps"`
	Progress   string    `json:"progress"`
	Timers     int       `json:"historyTimers"`
	Error      string    `json:"error"`
	Status     string    `json:"status"`
}

// nodeOrSkip returns node's path; without it the test is skipped (failed
// in CI).
func nodeOrSkip(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("node is not installed")
		}
		t.Skip("node is not installed")
	}
	return node
}

// runPageHarness runs the page's own script in node against the service
// at url (testdata/page_harness.js) and returns what it saw.
func runPageHarness(t *testing.T, node, url string) harnessPage {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, node, filepath.Join("testdata", "page_harness.js"), url, "page.js").Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, out)
	}
	var page harnessPage
	if err := json.Unmarshal(out, &page); err != nil {
		t.Fatalf("the harness printed %q: %v", out, err)
	}
	return page
}

// chartHoldsSeries checks that the page's live chart (its x values) holds
// every point of the run's series once, in order.
func chartHoldsSeries(t *testing.T, chart []float64, series []Event) {
	t.Helper()
	want := make([]float64, len(series))
	for i, p := range series {
		want[i] = p.T
	}
	if !slices.Equal(chart, want) {
		t.Errorf("the page's chart has %d points %v,\nthe run's series %d %v: a sample missing or twice", len(chart), chart, len(want), want)
	}
}
