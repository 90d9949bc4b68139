package main

import (
	"net/http"
	"strings"
	"testing"
)

// A reservation workload of more rows than servedRowsMax is refused over
// HTTP before it is generated: rows were not bounded, and 2^24 rows drawn
// from as many keys took minutes and GBs that neither DELETE nor SIGTERM
// could stop.
func TestServedRowsBound(t *testing.T) {
	_, srv := newTestBenchService(t)
	for body, refuse := range map[string]bool{
		`{"stores":["memory"],"rows":16777216,"skus":621379,"ops":1}`:             true,
		`{"stores":["memory"],"rows":2097153,"skus":200000,"ops":1}`:              true,
		`{"stores":["memory"],"sweep":"rows=1000,4000000","skus":200000,"ops":1}`: true,
	} {
		code, m := postJSON(t, srv.URL+"/v1/runs", body)
		detail, _ := m["detail"].(string)
		if refuse && (code != http.StatusBadRequest || !strings.Contains(detail, "at most 2097152 rows")) {
			t.Errorf("%s: %d %v, want 400 naming the limit", body, code, m)
		}
	}
}
