package bench

import (
	"testing"
	"time"
)

// A percentile is the nearest rank: the smallest recorded value that at
// least q% of the samples are at or below (HdrHistogram's Java reference
// rounds the rank up, ceil(q*n)). hdrhistogram-go rounds it to the nearest
// instead, so where q*n has a fraction below one half its p99 and p99.9
// were one sample short: of 70 ops, 69 at 1 ms and one at 100 ms, p99
// read 1 ms although only 98.6% of the ops took that long, and of 1,700
// ops p99.9 left out the second-slowest. Every workload's latency figures
// come from LatencyOf.
func TestAudit16PercentilesAreTheNearestRank(t *testing.T) {
	l := newLatencyRecorder()
	for range 69 {
		l.record(time.Millisecond)
	}
	l.record(100 * time.Millisecond)
	if got := merge([]*latencyRecorder{&l}).latency(); got.P99 != 100 {
		t.Errorf("70 samples, one of them 100 ms: p99 %v ms, want 100 (1 of 70 is above 1%%)", got.P99)
	}

	// Every count from 1 to 2,500, each sample in a bucket of its own:
	// each percentile must be the bucket of the sample at rank ceil(q*n).
	l = newLatencyRecorder()
	for n := 1; n <= 2500; n++ {
		v := time.Duration(1_000_000 + n*10_000) // 1 ms + n * 10 µs, ascending
		l.record(v)
		got := LatencyOf(l.h, l.max)
		for _, c := range []struct {
			name  string
			per10 int
			ms    float64
		}{{"p50", 5000, got.P50}, {"p99", 9900, got.P99}, {"p99.9", 9990, got.P999}} {
			rank := (n*c.per10 + 9999) / 10000
			want := int64(1_000_000 + rank*10_000)
			if gotNS := int64(c.ms*1e6 + 0.5); !l.h.ValuesAreEquivalent(gotNS, want) {
				t.Fatalf("%d samples: %s is %d ns, want the bucket of rank %d (%d ns)", n, c.name, gotNS, rank, want)
			}
		}
	}
}
