package bench

import (
	"errors"
	"strings"
	"testing"

	"allot/inventory"
	"allot/workload"
)

// TestClassify: the one reading of a store's reply that both runners use.
func TestClassify(t *testing.T) {
	capture := workload.Op{Kind: inventory.KindCapture, Key: inventory.RowKey{SKU: "a", Condition: "new", Source: "s1"}, N: 2}
	release := workload.Op{Kind: inventory.KindRelease, Key: inventory.RowKey{SKU: "a", Warehouse: "w1", Condition: "new", Source: "s1"}, N: 1}
	for _, c := range []struct {
		name     string
		op       workload.Op
		res      inventory.Result
		err      error
		attempts int
		verdict  verdict
		status   OpStatus
		detail   string
	}{
		{"error: unknown", capture, inventory.Result{}, errors.New("connection reset"), 0, verdictFailed, OpUnknown, "connection reset"},
		{"error beats a code", release, inventory.Result{Code: inventory.CodeOK}, errors.New("timeout"), 0, verdictFailed, OpUnknown, "timeout"},
		{"ok", capture, inventory.Result{Code: inventory.CodeOK}, nil, 3, verdictApplied, OpApplied, ""},
		{"short capture retried", capture, inventory.Result{Code: inventory.CodeInsufficient, Available: 1}, nil, 4, verdictRetry, OpNotRun, ""},
		{"short capture after the last retry", capture, inventory.Result{Code: inventory.CodeInsufficient, Available: 1}, nil, 5, verdictFailed, OpRefused, `op 8: capture of 2 from ("a", "new", "s1"): still insufficient (1 available) after 5 retries`},
		{"unknown row", release, inventory.Result{Code: inventory.CodeNotFound}, nil, 0, verdictFailed, OpRefused, "op 8: release of 1 to"},
		{"overflow", release, inventory.Result{Code: inventory.CodeOverflow, Detail: "past the max"}, nil, 0, verdictFailed, OpRefused, "past the max"},
	} {
		v, status, msg := classify(7, &c.op, &c.res, c.err, c.attempts, 5)
		if v != c.verdict || status != c.status || !strings.Contains(msg, c.detail) || (c.detail == "") != (msg == "") {
			t.Errorf("%s: classify = %d, %d, %q; want %d, %d, a message with %q", c.name, v, status, msg, c.verdict, c.status, c.detail)
		}
	}
}
