package server

import (
	"net/http"
	"testing"

	"allot/engine"
)

// TestHoldSubpathsNotFound: under /v1/holds/{hold} only /confirm and
// /cancel exist; any other sub-path (a trailing slash included) is an
// unknown endpoint (404), not a known one with the wrong method (405,
// whose Allow header would send a client to methods that cannot work).
func TestHoldSubpathsNotFound(t *testing.T) {
	s, _ := servedEngineWith(t, Config{HTTPAddr: "127.0.0.1:0"}, engine.Config{Durability: engine.DurabilityWrite})
	base := "http://" + s.HTTPAddr()
	for _, c := range []struct {
		method, path string
		status       int
	}{
		{"GET", "/v1/holds/h1/", http.StatusNotFound},
		{"POST", "/v1/holds/h1/", http.StatusNotFound},
		{"POST", "/v1/holds/h1/confirmx", http.StatusNotFound},
		{"GET", "/v1/holds/h1/cancel/x", http.StatusNotFound},
		{"GET", "/v1/holds/h1/confirm", http.StatusMethodNotAllowed},
		{"PUT", "/v1/holds/h1", http.StatusMethodNotAllowed},
		{"GET", "/v1/holds/h1", http.StatusNotFound}, // a hold that does not exist
	} {
		r := audit11Do(t, c.method, base+c.path, "", "")
		if r.status != c.status {
			t.Errorf("%s %s: %d %s, want %d", c.method, c.path, r.status, r.raw, c.status)
		}
	}
}
