package kv

import (
	"bytes"
	"strings"
	"testing"

	"allot/bench"
)

// Each kv write is one durable call: its run keeps the share of the bound
// (workload kv declares it), where kinds that do not are given none.
func TestAudit12KVWriteBoundKeepsItsShare(t *testing.T) {
	r := bench.Result{Store: "allot", Workload: bench.WorkloadInfo{Name: "kv/WRITE"}, Durability: "fsync", Workers: 4, Pipeline: 4,
		Status: bench.StatusOK, OpsPerSec: 8000, Extra: map[string]any{"request_type": "WRITE"},
		Bound: &bench.Bound{FsyncP50MS: 1, FsyncSamples: 300, InProcess: true, Workers: 4, InFlight: 16, OpsPerSecFsync: 16000, OpsPerSecFsyncRTT: 16000}}
	var out bytes.Buffer
	bench.WriteBounds(&out, []bench.Result{r})
	if s := out.String(); !strings.Contains(s, "measured 8000 = 50% / 50%") {
		t.Errorf("bound line %q: want the kv write run's share", s)
	}
}
