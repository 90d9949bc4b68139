package server_test

import (
	"net/http"
	"testing"

	"allot/server/servertest"
)

// GET /v1/changes on a closed engine (allot serve shutting down, a cluster
// node between terms) is refused, 503 with Retry-After, as every request
// the engine refuses is: it was 200 and an empty stream that ended at
// once, and a browser's EventSource reconnected every few seconds for
// ever, never told why.
func TestChangesSSEOnAClosedEngineIsUnavailable(t *testing.T) {
	s := servertest.Start(t, servertest.Options{})
	if err := s.Engine.Close(); err != nil {
		t.Fatal(err)
	}
	for _, url := range []string{"/v1/changes", "/v1/changes?after=0"} {
		resp, err := http.Get("http://" + s.HTTPAddr() + url)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
			t.Errorf("%s on a closed engine: %d (Retry-After %q), want 503 with Retry-After", url, resp.StatusCode, resp.Header.Get("Retry-After"))
		}
	}
}
