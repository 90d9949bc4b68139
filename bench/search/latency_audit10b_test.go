package search

import (
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"allot/bench"
)

// `allot bench --workload search --pipeline 16` printed p99.9 9.691 ms
// beside a max of 9.689 ms: the histogram's bucket top, not capped at
// the exact maximum.
func TestAudit10bPercentilesNotAboveMax(t *testing.T) {
	h := hdrhistogram.New(1, int64(time.Hour), 3)
	for _, v := range []int64{2_000_000, 9_689_000} {
		h.RecordValue(v)
	}
	r := &run{hist: []*hdrhistogram.Histogram{h}, maxNS: []int64{9_689_000}, elapsed: time.Second}
	var res bench.Result
	r.fill(&res, bench.RunConfig{})
	l := res.LatencyMS
	if l.Max != 9.689 || l.P50 > l.Max || l.P99 > l.Max || l.P999 > l.Max {
		t.Errorf("latency %+v: a percentile above the max (9.689)", l)
	}
}
