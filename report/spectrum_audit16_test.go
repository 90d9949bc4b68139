package report

import (
	"math"
	"strconv"
	"testing"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"allot/bench"
)

// The bench takes a percentile as the nearest rank, ceil(q*n)
// (bench.LatencyOf); the spectrum took hdrhistogram-go's
// ValueAtPercentiles, which rounds q*n to the nearest, one sample short
// whenever its fraction is below a half. With 160 samples of 1..160 ms the
// table's p99 is the 159th (159 ms) and the curve's 99% point was the
// 158th; with 1,600 the table's p99.9 is the 1,599th and the curve's 99.9%
// point was the 1,598th: hovering the curve at 99% showed another figure
// than the table's p99 column.
func TestAudit16SpectrumPercentilesAreTheTables(t *testing.T) {
	for _, n := range []int{160, 1600, 1000, 70, 3} {
		samples := make([]int64, n)
		for i := range samples {
			samples[i] = int64(i+1) * 1_000_000 // 1, 2, ... n ms: far apart in any bucket
		}
		r := auditRun(t, "memory", samples)
		h, err := hdrhistogram.Decode([]byte(r.Histogram))
		if err != nil {
			t.Fatal(err)
		}
		r.LatencyMS = bench.LatencyOf(h, samples[n-1])
		f := &bench.ResultsFile{Version: bench.ResultsVersion, Runs: []bench.Result{r}}
		cs := pageCharts(t, render(t, f))
		if len(cs.Spectrum) != 1 || len(cs.Spectrum[0].Series) != 1 {
			t.Fatalf("n=%d: spectrum charts %+v", n, cs.Spectrum)
		}
		c := cs.Spectrum[0]
		at := map[float64]float64{} // axis x -> chart value
		for i, x := range c.X {
			if x != nil && c.Series[0].Y[i] != nil {
				at[*x] = *c.Series[0].Y[i]
			}
		}
		for _, p := range []struct {
			x    float64
			name string
			want float64
		}{{100, "p99", r.LatencyMS.P99}, {1000, "p99.9", r.LatencyMS.P999}} {
			got, ok := at[p.x]
			if !ok {
				continue // past the run's samples: the curve has ended at its max
			}
			want, _ := strconv.ParseFloat(strconv.FormatFloat(p.want, 'g', 6, 64), 64)
			if got != want {
				t.Errorf("n=%d: the curve at %s shows %v ms, the table's %s is %v ms", n, p.name, got, p.name, want)
			}
		}
		// Every point is the nearest rank of its quantile: the smallest
		// sample that at least that share of the samples are at or below.
		// The page's x holds six digits; the ranks come from the axis itself.
		xs := spectrumAxis(int64(n))
		if len(xs) != len(c.X) {
			t.Fatalf("n=%d: %d points on the page, axis has %d", n, len(c.X), len(xs))
		}
		if last := xs[len(xs)-1]; last <= float64(n) {
			t.Errorf("n=%d: the axis ends at %v, not past the samples: the curve does not reach the max", n, last)
		}
		for i, x := range xs {
			y := c.Series[0].Y[i]
			if y == nil {
				t.Errorf("n=%d: no value at %v", n, x)
				continue
			}
			// The smallest rank k with k >= q*n, q = 1-1/x: exact with integers
			// at the decades, where x is exact.
			q := 1 - 1/x
			rank := int(math.Ceil(q * float64(n)))
			if x == math.Trunc(x) {
				rank = n - n/int(x)
			}
			rank = min(max(rank, 1), n)
			// The histogram holds a sample as the top of its bucket, within
			// 0.1% above it; neighbouring samples are 1/n apart, 0.6% or more.
			if want := float64(rank); *y < want || *y > want*1.002 {
				t.Errorf("n=%d: at %.5g%%: %v ms, want sample number %d, %v ms", n, 100*q, *y, rank, want)
			}
		}
	}
}
