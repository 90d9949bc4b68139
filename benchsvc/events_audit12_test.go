package benchsvc

import (
	"bufio"
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// sseEvent is one event of a stream as a client sees it.
type sseEvent struct {
	id, name, data string
}

// readEvents reads the events of GET url (with Last-Event-ID lastID when
// set) until the stream ends, and the comment lines it carried.
func readEvents(t *testing.T, url, lastID string) (events []sseEvent, comments []string) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s (Last-Event-ID %q): %d", url, lastID, resp.StatusCode)
	}
	var ev sseEvent
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if ev.name != "" {
				events = append(events, ev)
			}
			ev = sseEvent{}
		case strings.HasPrefix(line, ":"):
			comments = append(comments, line)
		case strings.HasPrefix(line, "id: "):
			ev.id = line[4:]
		case strings.HasPrefix(line, "event: "):
			ev.name = line[7:]
		case strings.HasPrefix(line, "data: "):
			ev.data = line[6:]
		}
	}
	return events, comments
}

// sampleIDs returns the ids of the sample events, as numbers.
func sampleIDs(t *testing.T, events []sseEvent) []int {
	t.Helper()
	var ids []int
	for _, ev := range events {
		if ev.name != "sample" {
			continue
		}
		n, err := strconv.Atoi(ev.id)
		if err != nil {
			t.Fatalf("sample event without a numeric id: %+v", ev)
		}
		ids = append(ids, n)
	}
	return ids
}

// TestEventIDsAndResumeAudit12: every sample carries its number as its
// id (1, 2, ...), and a client that reconnects with Last-Event-ID (as
// EventSource does) gets only the samples after it, live or replayed,
// then the end; it used to get the whole replay again.
func TestEventIDsAndResumeAudit12(t *testing.T) {
	s, srv, _ := newTestService(t, Config{})
	_, m := do(t, "POST", srv.URL+"/v1/runs", `{"duration":"600ms"}`)
	id := m["id"].(string)
	url := srv.URL + "/v1/runs/" + id + "/events"
	deadline := time.Now().Add(5 * time.Second)
	for {
		rec, _ := s.Get(id)
		if len(rec.Series) >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no 3 samples in 5 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Resumed while it runs: samples 3.. (two of them replayed, the rest
	// live), then the end.
	events, _ := readEvents(t, url, "2")
	ids := sampleIDs(t, events)
	if len(ids) < 2 || ids[0] != 3 {
		t.Fatalf("resumed after 2 while running: sample ids %v, want 3, 4, ...", ids)
	}
	for i := 1; i < len(ids); i++ {
		if ids[i] <= ids[i-1] {
			t.Errorf("sample ids %v do not increase", ids)
		}
	}
	if last := events[len(events)-1]; last.name != "end" {
		t.Errorf("the stream ended with %+v, want the end event", last)
	}
	rec := waitState(t, s, id)

	// The whole replay: ids 1..n, n the samples kept.
	events, _ = readEvents(t, url, "")
	ids = sampleIDs(t, events)
	if len(ids) != len(rec.Series) {
		t.Fatalf("replay: %d samples, the record has %d", len(ids), len(rec.Series))
	}
	for i, n := range ids {
		if n != i+1 {
			t.Fatalf("replay: sample ids %v, want 1..%d", ids, len(rec.Series))
		}
	}
	// Resumed after the run ended: the samples after the id, then the end.
	k := len(rec.Series) - 2
	events, _ = readEvents(t, url, strconv.Itoa(k))
	ids = sampleIDs(t, events)
	if len(ids) != 2 || ids[0] != k+1 || events[len(events)-1].name != "end" {
		t.Errorf("resumed after %d of %d: ids %v, events %v", k, len(rec.Series), ids, events)
	}
	// After the last sample: only the end.
	events, _ = readEvents(t, url, strconv.Itoa(len(rec.Series)))
	if len(events) != 1 || events[0].name != "end" {
		t.Errorf("resumed after the last sample: %v, want only the end", events)
	}
	// An id this stream never sent is a bad request, saying which.
	for _, bad := range []string{"x", "-1", "1.5"} {
		req, _ := http.NewRequest("GET", url, nil)
		req.Header.Set("Last-Event-ID", bad)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var detail strings.Builder
		bufio.NewReader(resp.Body).WriteTo(&detail)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(detail.String(), "Last-Event-ID") {
			t.Errorf("Last-Event-ID %q: %d %s, want 400 naming the header", bad, resp.StatusCode, detail.String())
		}
	}
}

// TestEventKeepaliveAudit12: an idle stream (a run that makes no sample
// for a long while, or waits in the queue) carries a comment every
// EventKeepalive, so that a proxy does not cut it.
func TestEventKeepaliveAudit12(t *testing.T) {
	s, srv, _ := newTestService(t, Config{EventInterval: time.Hour, EventKeepalive: 30 * time.Millisecond})
	_, m := do(t, "POST", srv.URL+"/v1/runs", `{"duration":"2s"}`)
	id := m["id"].(string)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/v1/runs/"+id+"/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	keepalives := 0
	sc := bufio.NewScanner(resp.Body)
	for keepalives < 3 && sc.Scan() {
		if sc.Text() == ": keepalive" {
			keepalives++
		}
	}
	if keepalives < 3 {
		t.Errorf("%d keepalive comments in 1 s of an idle stream, want one every 30 ms", keepalives)
	}
	if _, err := s.Cancel(id); err != nil {
		t.Fatal(err)
	}
}
