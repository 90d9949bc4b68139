package benchsvc

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
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

// eventsRecorder records each events request the page makes (its
// Last-Event-ID and when it came) and hands the first one's writer to a
// test, to cut that stream.
type eventsRecorder struct {
	mu      sync.Mutex
	lastIDs []string
	asked   []time.Time
}

// wrap returns w, or first(w) for the page's first events request.
func (e *eventsRecorder) wrap(w http.ResponseWriter, r *http.Request, first func(http.ResponseWriter) http.ResponseWriter) http.ResponseWriter {
	if !strings.HasSuffix(r.URL.Path, "/events") {
		return w
	}
	e.mu.Lock()
	e.lastIDs = append(e.lastIDs, r.Header.Get("Last-Event-ID"))
	e.asked = append(e.asked, time.Now())
	n := len(e.lastIDs)
	e.mu.Unlock()
	if n == 1 {
		return first(w)
	}
	return w
}

// seen returns the Last-Event-ID of each events request so far, and when
// each came.
func (e *eventsRecorder) seen() ([]string, []time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.lastIDs), slices.Clone(e.asked)
}

// runLivePage submits a 3 s run to s, runs the page in node against h
// while it goes, and returns what the page saw and the run's record once
// it ended.
func runLivePage(t *testing.T, node string, s *Service, h http.Handler) (harnessPage, Record) {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	rec, err := s.Submit(json.RawMessage(`{}`), []string{"--duration=3s"})
	if err != nil {
		t.Fatal(err)
	}
	page := runPageHarness(t, node, srv.URL)
	return page, waitState(t, s, rec.ID)
}
