package benchsvc

import (
	"net/http"
	"sync"
	"testing"
	"time"
)

// TestAudit21PageCatchesUpAtOnce: when the service ends a page's event
// stream because the page fell more than subscriptionDepth samples behind
// (its comment says so), nothing failed, yet the page took it for a drop:
// the red "dropped" status and a reconnect after a second's wait, and a
// second once more for each such end in a row. It asks again at once for
// the samples after the last one, says it is catching up, and counts no
// drop; its chart still holds every sample once.
func TestAudit21PageCatchesUpAtOnce(t *testing.T) {
	node := nodeOrSkip(t)
	s, _, _ := newTestService(t, Config{EventInterval: 50 * time.Millisecond})
	var mu sync.Mutex
	var ended time.Time // when the first stream ended behind
	var events eventsRecorder
	h := s.Handler()
	page, final := runLivePage(t, node, s, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w = events.wrap(w, r, func(w http.ResponseWriter) http.ResponseWriter {
			return &cutStream{ResponseWriter: w, samples: 10, behind: func() {
				mu.Lock()
				ended = time.Now()
				mu.Unlock()
			}}
		})
		h.ServeHTTP(w, r)
	}))
	ids, times := events.seen()
	mu.Lock()
	end := ended
	mu.Unlock()
	if page.Error != "" {
		t.Fatalf("%s (page status %q, events requests with Last-Event-ID %q)", page.Error, page.Status, ids)
	}
	if len(ids) < 2 || ids[0] != "" || ids[1] != "10" {
		t.Fatalf("events requests with Last-Event-ID %q, want none, then 10 after the stream ended behind", ids)
	}
	// The page's own wait after a drop is a second at least.
	if gap := times[1].Sub(end); gap > 500*time.Millisecond {
		t.Errorf("the page asked again %v after the stream ended behind, want at once", gap.Round(time.Millisecond))
	}
	if page.Reconnects != 0 || page.CatchUps < 1 {
		t.Errorf("the page counted %d drops and %d catch-ups, want 0 and at least 1", page.Reconnects, page.CatchUps)
	}
	if page.State != final.State {
		t.Errorf("the page saw the run end %q; it ended %s", page.State, final.State)
	}
	chartHoldsSeries(t, page.T, final.Series)
}
