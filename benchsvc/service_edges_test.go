package benchsvc

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestCrossSiteRequestsAreRefused: without a token the service trusts
// loopback, but a browser on this machine reaches loopback too: any page
// it opens may POST a text/plain body (no CORS preflight) and start a
// bench. A request the browser marks as cross-site is refused before it
// touches the service; a same-origin one (the page) and one without
// browser headers (curl, scripts) are not.
func TestCrossSiteRequestsAreRefused(t *testing.T) {
	s, srv, _ := newTestService(t, Config{})
	body := `{"stores":["embedded"],"duration":"10ms"}`
	code, m := do(t, "POST", srv.URL+"/v1/runs", body,
		"Content-Type", "text/plain", "Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site")
	if code != http.StatusForbidden {
		t.Errorf("a cross-site POST /v1/runs: %d %v, want 403", code, m)
	}
	code, m = do(t, "POST", srv.URL+"/test/gen-load/embedded", `{"timeInMilis":10,"requestType":"READ"}`,
		"Content-Type", "text/plain", "Origin", "https://evil.example")
	if code != http.StatusForbidden {
		t.Errorf("a cross-origin POST /test/gen-load: %d %v, want 403", code, m)
	}
	if page, _ := s.List("", listLimitDefault); page.Total != 0 {
		t.Fatalf("cross-site requests started %d runs", page.Total)
	}
	if code, m := do(t, "POST", srv.URL+"/v1/runs", body, "Sec-Fetch-Site", "same-origin", "Origin", srv.URL); code != http.StatusAccepted {
		t.Errorf("the page's own POST: %d %v", code, m)
	}
	if code, m := do(t, "POST", srv.URL+"/v1/runs", body); code != http.StatusAccepted {
		t.Errorf("a POST without browser headers (curl): %d %v", code, m)
	}
}

// TestGenLoadRunsOneStore: the seed's endpoint runs workload rw on the
// one store its path names. A path naming several (a comma list, which
// the bench's --stores takes) is no store: 404, nothing run.
func TestGenLoadRunsOneStore(t *testing.T) {
	s, srv, _ := newTestService(t, Config{})
	code, m := do(t, "POST", srv.URL+"/test/gen-load/embedded,redis", `{"timeInMilis":10,"requestType":"READ"}`)
	if code != http.StatusNotFound || m["error"] != "unknown_store" {
		t.Errorf("gen-load on two stores: %d %v, want 404 unknown_store", code, m)
	}
	if page, _ := s.List("", listLimitDefault); page.Total != 0 {
		n := page.Total
		t.Errorf("gen-load on two stores started %d runs", n)
	}
}

// TestFullQueueIsNotABadRequest: a valid run refused because the queue
// is full was not the client's mistake: it gets 503 (try later), not 400
// "invalid", which tells a client never to send it again.
func TestFullQueueIsNotABadRequest(t *testing.T) {
	s, srv, _ := newTestService(t, Config{})
	for i := range queueMax + 1 { // one runs, queueMax wait
		if _, err := s.Submit(json.RawMessage(`{}`), []string{"--duration=1h"}); err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
	}
	code, m := do(t, "POST", srv.URL+"/v1/runs", `{"duration":"1h"}`)
	if code != http.StatusServiceUnavailable {
		t.Errorf("POST with a full queue: %d %v, want 503", code, m)
	}
	if !strings.Contains(fmt.Sprint(m["detail"]), "waiting") {
		t.Errorf("the error does not say the queue is full: %v", m)
	}
}

// TestRoutingErrorsAreJSON: an unknown path and a method the path does
// not take are answered in JSON, as every other error (the mux answered
// "404 page not found" and "Method Not Allowed" in plain text), with 405's
// Allow header.
func TestRoutingErrorsAreJSON(t *testing.T) {
	_, srv, _ := newTestService(t, Config{})
	for _, c := range []struct {
		method, path string
		status       int
		code, allow  string
	}{
		{"GET", "/v1/nosuch", http.StatusNotFound, "not_found", ""},
		{"PUT", "/v1/runs", http.StatusMethodNotAllowed, "method_not_allowed", "GET, HEAD, POST"},
		{"POST", "/v1/runs/x", http.StatusMethodNotAllowed, "method_not_allowed", "DELETE, GET, HEAD"},
	} {
		req, _ := http.NewRequest(c.method, srv.URL+c.path, nil)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		err = json.NewDecoder(res.Body).Decode(&m)
		res.Body.Close()
		if err != nil || res.StatusCode != c.status || m["error"] != c.code || res.Header.Get("Allow") != c.allow {
			t.Errorf("%s %s: %d %v (Allow %q, %v), want %d %s (Allow %q)", c.method, c.path, res.StatusCode, m, res.Header.Get("Allow"), err, c.status, c.code, c.allow)
		}
	}
}
