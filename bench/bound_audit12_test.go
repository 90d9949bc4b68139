package bench

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// The median of an even count is the mean of its two middle values: it
// took the upper one, so the fdatasync and round-trip medians, and the
// bounds from them, leaned high.
func TestAudit12MedianOfEvenCountAveragesTheMiddles(t *testing.T) {
	for _, tc := range []struct {
		in   []time.Duration
		want time.Duration
	}{
		{[]time.Duration{40, 10, 30, 20}, 25},
		{[]time.Duration{3, 1, 2}, 2},
		{[]time.Duration{7}, 7},
		{[]time.Duration{1, 2}, 1}, // 1.5 ns, truncated
		{nil, 0},
	} {
		if got := median(tc.in); got != tc.want {
			t.Errorf("median(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

// boundRun is a durable run at 8000 ops/s against a bound of 16 in flight
// over a 1 ms fdatasync: 16,000 ops/s.
func boundRun(name string, extra map[string]any) Result {
	return Result{Store: "allot", Workload: WorkloadInfo{Name: name}, Durability: "fsync", Workers: 16, Pipeline: 1,
		Status: StatusOK, OpsPerSec: 8000, Extra: extra,
		Bound: &Bound{FsyncP50MS: 1, FsyncSamples: 300, InProcess: true, Workers: 16, InFlight: 16, OpsPerSecFsync: 16000, OpsPerSecFsyncRTT: 16000}}
}

// The bound counts one durable call per op in flight. An rw run with
// --transactional --batch 10 carries ten ops in a call, a checkout cart
// makes two calls or more: their "% of bound" was off by those factors.
// The share is printed where one op is one durable call (ims; a kind that
// declares it); for any other the bound is printed in durable calls/s,
// with the reason there is no share.
func TestAudit12BoundShareOnlyWhereAnOpIsOneDurableCall(t *testing.T) {
	var out bytes.Buffer
	WriteBounds(&out, []Result{boundRun("seed", nil)})
	if s := out.String(); !strings.Contains(s, "measured 8000 = 50% / 50%") {
		t.Errorf("ims run: bound line %q, want its share", s)
	}
	out.Reset()
	// No kind is registered in this package's tests: rw's registration
	// lives in bench/rw and declares nothing.
	WriteBounds(&out, []Result{boundRun("rw/MODIFY", map[string]any{"transactional": true, "batch": 10})})
	s := out.String()
	if strings.Contains(s, "%") {
		t.Errorf("rw run: bound line %q gives a share", s)
	}
	if !strings.Contains(s, "durable calls/s") || !strings.Contains(s, "no share") || !strings.Contains(s, "workload rw") {
		t.Errorf("rw run: bound line %q: want the bound in durable calls/s and why there is no share, naming the workload", s)
	}
}
