package benchsvc

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// stalledStream is the response of an event stream whose reader stops
// reading: its first write blocks until release is closed (as a write
// blocks on a connection whose peer reads nothing), so that its handler
// takes no live sample from its subscription meanwhile. It keeps what
// the handler wrote.
type stalledStream struct {
	header  http.Header
	stalled chan struct{} // closed at the first write
	release chan struct{}
	once    sync.Once
	mu      sync.Mutex
	body    strings.Builder
}

func newStalledStream() *stalledStream {
	return &stalledStream{header: http.Header{}, stalled: make(chan struct{}), release: make(chan struct{})}
}

func (s *stalledStream) Header() http.Header { return s.header }
func (s *stalledStream) WriteHeader(int)     {}
func (s *stalledStream) Flush()              {}

func (s *stalledStream) Write(p []byte) (int, error) {
	s.once.Do(func() { close(s.stalled) })
	<-s.release
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.body.Write(p)
}

func (s *stalledStream) text() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.body.String()
}

// parseEvents splits an event stream's text into its events.
func parseEvents(text string) []sseEvent {
	var events []sseEvent
	var ev sseEvent
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if ev.name != "" {
				events = append(events, ev)
			}
			ev = sseEvent{}
		case strings.HasPrefix(line, "id: "):
			ev.id = line[4:]
		case strings.HasPrefix(line, "event: "):
			ev.name = line[7:]
		case strings.HasPrefix(line, "data: "):
			ev.data = line[6:]
		}
	}
	return events
}

// consecutive reports the first gap in ids, which should run from from
// on one by one.
func consecutive(ids []int, from int) error {
	for i, n := range ids {
		if n != from+i {
			return fmt.Errorf("sample %d follows %d", n, from+i-1)
		}
	}
	return nil
}

// readToEnd reads the event stream at url from sample lastID on as a
// client that keeps up should: each time the stream ends before the end
// event (the service ends the stream of a reader that falls behind), it
// reconnects with the last sample's id; at a reset it drops the samples
// it holds. It returns the samples it holds at the end, the end event,
// and the resets.
func readToEnd(t *testing.T, url, lastID string) (samples []sseEvent, end sseEvent, resets []sseEvent) {
	t.Helper()
	for streams := 0; streams < 100; streams++ {
		events, _ := readEvents(t, url, lastID)
		for _, ev := range events {
			switch ev.name {
			case "reset":
				resets = append(resets, ev)
				samples = nil
			case "sample":
				samples = append(samples, ev)
				lastID = ev.id
			case "end":
				return samples, ev, resets
			}
		}
	}
	t.Fatalf("the stream of %s did not reach its end in 100 connections", url)
	return nil, sseEvent{}, nil
}

// stallSubscriber starts a run of an endless job on s, opens its event
// stream with a reader that stops reading while the run makes more than
// 8 samples (the depth of a subscription's channel) after it subscribed,
// then reads on. It returns the run's id and the stream's events up to
// its end, and fails the test when they miss a sample.
func stallSubscriber(t *testing.T, s *Service) (id string, events []sseEvent) {
	t.Helper()
	rec, err := s.Submit(json.RawMessage(`{}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	id = rec.ID
	t.Cleanup(func() { s.Cancel(id) })
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, _ := s.Get(id)
		if got.State == StateRunning && len(got.Series) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s made no sample in 10 s (state %s)", id, got.State)
		}
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req := httptest.NewRequestWithContext(ctx, "GET", "http://127.0.0.1/v1/runs/"+id+"/events", nil)
	w := newStalledStream()
	handled := make(chan struct{})
	go func() {
		defer close(handled)
		s.Handler().ServeHTTP(w, req)
	}()
	// The handler has subscribed before its first write.
	<-w.stalled
	got, _ := s.Get(id)
	subscribed := got.Series[len(got.Series)-1].Seq
	for {
		got, _ = s.Get(id)
		if got.Series[len(got.Series)-1].Seq >= subscribed+20 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s made no 20 samples in 10 s", id)
		}
		time.Sleep(time.Millisecond)
	}
	close(w.release)
	// A stream that misses no sample ends here: its reader is to come
	// back with Last-Event-ID. One that goes on is cut after a while.
	select {
	case <-handled:
	case <-time.After(2 * time.Second):
		cancel()
		<-handled
	}
	events = parseEvents(w.text())
	ids := sampleIDs(t, events)
	if len(ids) == 0 {
		t.Fatalf("the stalled stream sent no sample: %q", w.text())
	}
	// The replay (the series when it subscribed, its older points
	// merged on a fast run), then every sample after it.
	live := 0
	for i := range ids {
		if i > 0 && ids[i] <= ids[i-1] {
			t.Fatalf("the stalled stream's ids %v... do not increase", head(ids[max(i-1, 0):]))
		}
		if ids[i] <= subscribed {
			live = i + 1
		}
	}
	if err := consecutive(ids[live:], subscribed+1); err != nil {
		t.Fatalf("the stream of a reader that stopped for 20 samples after sample %d: %v (ids %v...): samples missed, and its Last-Event-ID %d is past them", subscribed, err, head(ids[live:]), ids[len(ids)-1])
	}
	if ids[len(ids)-1] <= subscribed {
		t.Fatalf("the stalled stream sent no live sample after sample %d", subscribed)
	}
	for _, ev := range events {
		if ev.name == "end" {
			t.Fatalf("the stalled stream sent the end while run %s runs", id)
		}
	}
	return id, events
}

// TestSlowReaderMissesNoSampleAudit14: a reader more than 8 samples
// behind the live stream (its subscription's depth) had the samples it
// had no room for dropped, and the next one's id moved its Last-Event-ID
// past them: no reconnect ever got them. Now its stream ends there, and
// the reader, reconnecting with the last id it got, gets every sample
// after it, in order, then the end.
func TestSlowReaderMissesNoSampleAudit14(t *testing.T) {
	s, srv, _ := newTestService(t, Config{Parse: func([]string) (Job, error) { return &endlessJob{}, nil }, EventInterval: 5 * time.Millisecond})
	id, stalled := stallSubscriber(t, s)
	ids := sampleIDs(t, stalled)
	last := ids[len(ids)-1]
	time.AfterFunc(100*time.Millisecond, func() { s.Cancel(id) })
	samples, end, resets := readToEnd(t, srv.URL+"/v1/runs/"+id+"/events", strconv.Itoa(last))
	rec := waitState(t, s, id)
	if len(resets) > 0 {
		t.Fatalf("resumed after sample %d of %d: reset, though it is one of the recent samples", last, len(rec.Series))
	}
	again := sampleIDs(t, samples)
	if err := consecutive(again, last+1); err != nil {
		t.Fatalf("resumed after sample %d: %v (ids %v...)", last, err, head(again))
	}
	if n := len(again); n == 0 || again[n-1] != lastSeq(rec.Series) {
		t.Errorf("resumed after sample %d: ids %v..., the run's last sample is %d", last, head(again), lastSeq(rec.Series))
	}
	if !strings.Contains(end.data, rec.State) {
		t.Errorf("the end event %+v, the run ended %s", end, rec.State)
	}
}

// TestSlowReaderPastTheSeriesAudit14: a reader cut off as too slow that
// comes back only once the samples after its last one have been merged
// into older points gets "reset" and the whole series, then the live
// samples, then the end: the samples it missed come merged into the
// points of the series, none lost.
func TestSlowReaderPastTheSeriesAudit14(t *testing.T) {
	s := newLongRunService(t, &endlessJob{})
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	id, stalled := stallSubscriber(t, s)
	ids := sampleIDs(t, stalled)
	last := ids[len(ids)-1]
	deadline := time.Now().Add(60 * time.Second)
	for {
		rec, _ := s.Get(id)
		if !resumable(rec.Series, last) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sample %d still ends a point of the series after a minute", last)
		}
		time.Sleep(time.Millisecond)
	}
	time.AfterFunc(100*time.Millisecond, func() { s.Cancel(id) })
	// This stream too may end before the run's: its reader falls behind
	// a sample every 50 µs.
	samples, end, resets := readToEnd(t, srv.URL+"/v1/runs/"+id+"/events", strconv.Itoa(last))
	if len(resets) == 0 || !strings.Contains(resets[0].data, `"after":`+strconv.Itoa(last)+",") {
		t.Fatalf("resumed after sample %d, merged since: resets %v, want one naming it", last, resets)
	}
	rec := waitState(t, s, id)
	again := sampleIDs(t, samples)
	if len(again) == 0 {
		t.Fatal("no sample after the reset")
	}
	for i := 1; i < len(again); i++ {
		if again[i] <= again[i-1] {
			t.Fatalf("after the reset: ids %v... do not increase", head(again[i-1:]))
		}
	}
	// The replay ends at a recent sample; from the recent ones on, one by
	// one.
	recent := again[len(again)-min(len(again), seriesRecentMax):]
	if err := consecutive(recent, recent[0]); err != nil {
		t.Errorf("after the reset, the newest samples: %v", err)
	}
	if n := len(again); again[n-1] != lastSeq(rec.Series) {
		t.Errorf("after the reset the last sample is %d, the run's %d", again[n-1], lastSeq(rec.Series))
	}
	if !strings.Contains(end.data, rec.State) {
		t.Errorf("the end event %+v, the run ended %s", end, rec.State)
	}
}
