package bench

import (
	"bytes"
	"strings"
	"testing"
)

func TestWriteTable(t *testing.T) {
	runs := []Result{
		{Store: "memory", Durability: "fsync", Workers: 16, Status: StatusOK, Ops: 1000, Seconds: 0.5, OpsPerSec: 2000,
			LatencyMS: Latency{P50: 0.001, P99: 0.01, P999: 0.1, Max: 12.5}, Check: CheckResult{OK: true}},
		{Store: "naive-postgres", Durability: "write", Workers: 16, Status: StatusCheckFailed, Ops: 1000,
			Check: CheckResult{ViolationCount: 3, Violations: []string{"group x oversold", "group y oversold"}}},
		{Store: "redis", Durability: "fsync", Workers: 16, Status: StatusServerDown, Error: "dial tcp 127.0.0.1:16379: connection refused"},
	}
	var b bytes.Buffer
	if err := WriteTable(&b, runs); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"ops/s", "p99.9 ms", "conflict retries",
		"check: OK  (memory, fsync, 16 workers)",
		"check: FAILED (3 violations)  (naive-postgres, write, 16 workers)",
		"violation: group x oversold", "... and 1 more",
		"SERVER DOWN", "connection refused",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	b.Reset()
	WriteTable(&b, runs[:1])
	if !strings.Contains(b.String(), "\ncheck: OK\n") {
		t.Errorf("a single run's check line is not plain %q:\n%s", "check: OK", b.String())
	}
	if runs[0].Failed() || !runs[1].Failed() || !runs[2].Failed() {
		t.Error("Failed() disagrees with the statuses")
	}
}
