package bench

import (
	"bytes"
	"math"
	"strings"
	"testing"
)

func TestBreakdownIsTheRunsShare(t *testing.T) {
	bounds := []float64{0.001, 0.002, 0.004}
	before := Stages{{Stage: "sync", Bounds: bounds, Counts: []uint64{5, 5, 5}, Count: 5, Sum: 0.004}}
	// The run added 10 samples of 1-2 ms and 10 of 2-4 ms, 0.05 s in all.
	after := Stages{
		{Stage: "read", Bounds: bounds, Counts: []uint64{1, 1, 1}, Count: 1, Sum: 0.0005},
		{Stage: "sync", Bounds: bounds, Counts: []uint64{5, 15, 25}, Count: 25, Sum: 0.054},
	}
	b := NewBreakdown(before, after)
	if len(b.Stages) != 2 || b.Stages[0].Stage != "read" || b.Stages[1].Stage != "sync" {
		t.Fatalf("stages %+v: want read and sync in the server's order", b.Stages)
	}
	s := b.Stages[1]
	if s.Count != 20 || math.Abs(s.MeanMS-2.5) > 1e-9 {
		t.Fatalf("sync %+v: want 20 samples of mean 2.5 ms (the run's, not the server's lifetime)", s)
	}
	// The median is the 10th of 20 samples: the top of the 1-2 ms bucket.
	if math.Abs(s.P50MS-2) > 1e-9 || s.P99MS <= 2 || s.P99MS > 4 {
		t.Fatalf("sync p50 %v p99 %v: want 2 and within (2, 4]", s.P50MS, s.P99MS)
	}
	// A stage absent before counts from zero.
	if r := b.Stages[0]; r.Count != 1 || math.Abs(r.MeanMS-0.5) > 1e-9 {
		t.Fatalf("read %+v", r)
	}
	var out bytes.Buffer
	if err := WriteBreakdowns(&out, []Result{{Store: "allot", Durability: "fsync", Workers: 16, Breakdown: b}}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "sync") || !strings.Contains(out.String(), "2.5000") {
		t.Fatalf("breakdown table:\n%s", out.String())
	}
}

func TestQuantileAboveTheLastBound(t *testing.T) {
	// Every sample above the last bound: the quantile is that bound, not
	// an extrapolation, and marked as above it.
	if q, above := quantile([]float64{0.001}, []uint64{0}, 4, 0.5); q != 0.001 || !above {
		t.Fatalf("quantile = %v (above %v), want the last bound 0.001, above", q, above)
	}
	if q, above := quantile([]float64{0.001}, []uint64{4}, 4, 0.5); q != 0.0005 || above {
		t.Fatalf("quantile = %v (above %v), want 0.0005 within the range", q, above)
	}
}
