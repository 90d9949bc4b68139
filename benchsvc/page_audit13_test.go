package benchsvc

import (
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// cutStream is an event stream whose connection drops after samples
// sample events, as when a proxy restarts or a laptop sleeps; or, with
// behind set, that the service ends then as it ends the stream of a
// reader fallen too far behind: its comment (behindNote), then a clean end
// of the response, when it calls behind.
type cutStream struct {
	http.ResponseWriter
	samples int
	sent    int
	behind  func()
	ended   bool
}

var errEndedBehind = errors.New("the stream ended behind")

func (c *cutStream) Write(p []byte) (int, error) {
	if c.ended {
		return 0, errEndedBehind
	}
	if c.sent >= c.samples {
		if c.behind == nil {
			// net/http drops the connection, mid-stream.
			panic(http.ErrAbortHandler)
		}
		// The handler's write fails and it returns: the response ends.
		c.ended = true
		c.ResponseWriter.Write([]byte(behindNote))
		c.Flush()
		c.behind()
		return 0, errEndedBehind
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
	node := nodeOrSkip(t)
	s, _, _ := newTestService(t, Config{EventInterval: 50 * time.Millisecond})
	var mu sync.Mutex
	polls := 0
	var events eventsRecorder
	h := s.Handler()
	page, final := runLivePage(t, node, s, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
		w = events.wrap(w, r, func(w http.ResponseWriter) http.ResponseWriter {
			return &cutStream{ResponseWriter: w, samples: 10}
		})
		h.ServeHTTP(w, r)
	}))
	ids, _ := events.seen()
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
	chartHoldsSeries(t, page.T, final.Series)
}
