package report

import (
	"math"
	"strings"
	"testing"

	"allot/bench"
)

// TestAudit13FoldedSecondsDrawnFlat: a result keeps an hour of
// per-second counts and folds a longer run's later seconds into the last
// (bench.ThroughputSecondsMax). The chart drew that bucket as one second:
// a day's run at a steady 1,000 ops/s ended in a spike of 82.8 million
// ops/s. It is drawn as what it is, the folded seconds' average rate,
// flat from the hour to the run's end, and the caption says those
// seconds are folded; a short run beside it is drawn as before.
func TestAudit13FoldedSecondsDrawnFlat(t *testing.T) {
	const rate, seconds = 1000, 86400.0
	long := make([]int64, bench.ThroughputSecondsMax)
	for i := range long {
		long[i] = rate
	}
	long[len(long)-1] = rate * int64(seconds-float64(len(long)-1)) // seconds 3600 to 86,400
	short := []int64{500, 500, 500}
	runs := []bench.Result{
		{Store: "embedded", Workers: 1, Ops: rate * int64(seconds), Seconds: seconds, OpsPerSec: rate, Throughput: long},
		{Store: "redis", Workers: 1, Ops: 1500, Seconds: 3, OpsPerSec: 500, Throughput: short},
	}
	c, ok := throughputChart(runs, []string{"long", "short"}, map[string]int{})
	if !ok || len(c.Series) != 2 {
		t.Fatalf("chart %v, %d series: want both runs drawn", ok, len(c.Series))
	}
	for i := 1; i < len(c.X); i++ {
		if !(c.X[i] > c.X[i-1]) {
			t.Fatalf("x axis not increasing at %d: %v, %v", i, c.X[i-1], c.X[i])
		}
	}
	if end := c.X[len(c.X)-1]; end != seconds {
		t.Errorf("the x axis ends at %v s, want the long run's end, %v s", end, seconds)
	}
	for i, y := range c.Series[0].Y {
		if math.IsNaN(y) || math.Abs(y-rate) > 1e-6 {
			t.Fatalf("the long run at %v s: %v ops/s, want %d all along (the folded seconds at their average rate)", c.X[i], y, rate)
		}
	}
	for i, y := range c.Series[1].Y {
		want := math.NaN()
		if i < len(short) {
			want = 500
		}
		if !(y == want || math.IsNaN(y) && math.IsNaN(want)) {
			t.Fatalf("the short run at %v s: %v, want %v", c.X[i], y, want)
		}
	}
	if !strings.Contains(c.Caption, "long: seconds 3,600 to 86,400 are folded") {
		t.Errorf("the caption does not say which seconds are folded: %q", c.Caption)
	}
}
