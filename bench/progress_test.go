package bench

import (
	"testing"
	"time"
)

func TestCoarseBuckets(t *testing.T) {
	prev := -1
	for _, ns := range []int64{0, 1, 3, 4, 5, 7, 8, 100, 999, 1000, 1 << 20, 1<<40 + 12345, 1<<63 - 1} {
		b := coarseBucket(ns)
		if b < prev || b >= len(coarseHistogram{}.counts) {
			t.Fatalf("bucket of %d is %d (previous %d)", ns, b, prev)
		}
		prev = b
		// The bucket's upper bound is above the value and within 25%.
		if up := coarseValue(b); up <= ns && ns < 1<<62 || (ns >= 4 && float64(up) > float64(ns)*1.26) {
			t.Fatalf("value %d: bucket %d bound %d", ns, b, up)
		}
	}
}

func TestCoarseQuantile(t *testing.T) {
	var a, b coarseHistogram
	for range 990 {
		a.record(int64(time.Microsecond))
	}
	for range 10 {
		b.record(int64(time.Second))
	}
	if q := coarseQuantile([]*coarseHistogram{&a, &b}, 0.5); q < time.Microsecond || q > 2*time.Microsecond {
		t.Fatalf("p50 %v", q)
	}
	if q := coarseQuantile([]*coarseHistogram{&a, &b}, 0.995); q < time.Second || q > 2*time.Second {
		t.Fatalf("p99.5 %v", q)
	}
	if q := coarseQuantile(nil, 0.99); q != 0 {
		t.Fatalf("empty: %v", q)
	}
}

func TestProgressReported(t *testing.T) {
	w := genWorkload(t, "seed", 20_000)
	var got []Progress
	res := runMemory(t, RunConfig{Workers: 2, Progress: func(p Progress) { got = append(got, p) }}, w)
	if len(got) == 0 || !got[len(got)-1].Final || got[len(got)-1].Done != res.Ops || got[len(got)-1].Total != int64(len(w.Ops)) {
		t.Fatalf("progress calls: %+v", got)
	}
}
