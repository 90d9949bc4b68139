package cart

import (
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"allot/bench"
)

// The checkout and order workloads' percentiles were the histogram's
// bucket tops, above the exact maximum when the slowest carts share its
// bucket.
func TestAudit10bPercentilesNotAboveMax(t *testing.T) {
	h := hdrhistogram.New(1, int64(time.Hour), 3)
	h.RecordValue(61_900_000)
	r := &run{mode: ModeOrder, w: &Workload{}, latency: []*hdrhistogram.Histogram{h}, latMax: []int64{61_900_000}, elapsed: time.Second}
	r.doneN.Store(1)
	res := bench.Result{Extra: map[string]any{}}
	r.fill(&res, &checked{})
	l := res.LatencyMS
	if l.Max != 61.9 || l.P50 > l.Max || l.P99 > l.Max || l.P999 > l.Max {
		t.Errorf("latency %+v: a percentile above the max (61.9)", l)
	}
	if p := res.Extra["latency_p99_ms"]; p != l.P99 {
		t.Errorf("extra latency_p99_ms %v, table's p99 %v", p, l.P99)
	}
}
