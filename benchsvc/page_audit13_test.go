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

// cutStream is an event stream whose connection drops after samples
// sample events, as when a proxy restarts or a laptop sleeps.
type cutStream struct {
	http.ResponseWriter
	samples int
	sent    int
}

func (c *cutStream) Write(p []byte) (int, error) {
	if c.sent >= c.samples {
		// net/http drops the connection, mid-stream.
		panic(http.ErrAbortHandler)
	}
	c.sent += strings.Count(string(p), "event: sample")
	return c.ResponseWriter.Write(p)
}

func (c *cutStream) Flush()                      { c.ResponseWriter.(http.Flusher).Flush() }
func (c *cutStream) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// TestPageReconnectsEventStreamAudit13 runs the page's own script in node
// (a document stubbed just enough for it to run; its fetches, stream
// reading and timers are its own) against a real service whose first
// event stream drops after 10 samples, and whose first answer to the
// page's progress poll is a 503. The page gave up on both: its chart
// froze, the run's end never showed, the progress bar stopped. It
// reconnects now with Last-Event-ID, its chart holds every sample of the
// run once, in order, and its progress bar fills. And a change of token
// started one more history timer each time (the page then polled the
// history twice as often, three times, ...): it keeps one.
func TestPageReconnectsEventStreamAudit13(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("node is not installed")
		}
		t.Skip("node is not installed")
	}
	s, _, _ := newTestService(t, Config{EventInterval: 50 * time.Millisecond})
	var mu sync.Mutex
	var lastIDs []string // the Last-Event-ID of each events request
	polls := 0
	h := s.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/v1/runs/") && strings.Count(r.URL.Path, "/") == 3 {
			mu.Lock()
			polls++
			first := polls == 1
			mu.Unlock()
			if first {
				writeError(w, http.StatusServiceUnavailable, "unavailable", "the service is restarting")
				return
			}
		}
		if strings.HasSuffix(r.URL.Path, "/events") {
			mu.Lock()
			lastIDs = append(lastIDs, r.Header.Get("Last-Event-ID"))
			first := len(lastIDs) == 1
			mu.Unlock()
			if first {
				w = &cutStream{ResponseWriter: w, samples: 10}
			}
		}
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	rec, err := s.Submit(json.RawMessage(`{}`), []string{"--duration=3s"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, node, filepath.Join("testdata", "page_harness.js"), srv.URL, "page.js").Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, out)
	}
	var page struct {
		T          []float64 `json:"t"`
		State      string    `json:"state"`
		Reconnects int       `json:"reconnects"`
		Progress   string    `json:"progress"`
		Timers     int       `json:"historyTimers"`
		Error      string    `json:"error"`
		Status     string    `json:"status"`
	}
	if err := json.Unmarshal(out, &page); err != nil {
		t.Fatalf("the harness printed %q: %v", out, err)
	}
	final := waitState(t, s, rec.ID)
	mu.Lock()
	ids := slices.Clone(lastIDs)
	mu.Unlock()
	if page.Error != "" {
		t.Fatalf("%s (page status %q, events requests with Last-Event-ID %q)", page.Error, page.Status, ids)
	}
	if len(ids) < 2 || ids[0] != "" || ids[1] != "10" {
		t.Errorf("events requests with Last-Event-ID %q, want none, then 10 after the drop", ids)
	}
	if page.State != final.State || page.Reconnects < 1 {
		t.Errorf("the page saw the run end %q after %d reconnects; it ended %s", page.State, page.Reconnects, final.State)
	}
	if page.Progress != "100%" {
		t.Errorf("the page's progress bar is at %q after the run is done, want 100%%", page.Progress)
	}
	if page.Timers != 1 {
		t.Errorf("after two changes of the token the page has %d history timers, want 1", page.Timers)
	}
	want := make([]float64, len(final.Series))
	for i, p := range final.Series {
		want[i] = p.T
	}
	if !slices.Equal(page.T, want) {
		t.Errorf("the page's chart has %d points %v,\nthe run's series %d %v: a sample missing or twice", len(page.T), page.T, len(want), want)
	}
}
