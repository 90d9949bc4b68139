package bench

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"allot/store"
)

// Stages are a server's cumulative stage histograms (store.StageReporter).
type Stages []store.StageHistogram

// StagesOf keeps s as Stages.
func StagesOf(s []store.StageHistogram) Stages { return Stages(s) }

// Breakdown is where a server's time went during one run, stage by stage:
// the difference of its stage histograms after and before the run.
type Breakdown struct {
	Stages []StageTime `json:"stages"`
}

// StageTime is one stage's figures over a run.
type StageTime struct {
	Stage string `json:"stage"`
	// Count is how many samples the stage took in the run: per op for the
	// engine's stages, per round (one read and one reply write, a whole
	// pipeline) for the connection's.
	Count  uint64  `json:"count"`
	MeanMS float64 `json:"mean_ms"`
	// P50MS and P99MS are interpolated within the histogram's buckets.
	P50MS float64 `json:"p50_ms"`
	P99MS float64 `json:"p99_ms"`
}

// NewBreakdown returns after - before, stage by stage (stages are matched
// by name; one missing before counts from zero).
func NewBreakdown(before, after Stages) *Breakdown {
	b := &Breakdown{}
	for _, a := range after {
		counts := append([]uint64(nil), a.Counts...)
		count, sum := a.Count, a.Sum
		for _, p := range before {
			if p.Stage == a.Stage && len(p.Counts) == len(counts) {
				for i := range counts {
					counts[i] -= p.Counts[i]
				}
				count -= p.Count
				sum -= p.Sum
			}
		}
		st := StageTime{Stage: a.Stage, Count: count}
		if count > 0 {
			st.MeanMS = 1e3 * sum / float64(count)
			st.P50MS = 1e3 * quantile(a.Bounds, counts, count, 0.50)
			st.P99MS = 1e3 * quantile(a.Bounds, counts, count, 0.99)
		}
		b.Stages = append(b.Stages, st)
	}
	return b
}

// quantile interpolates the q-quantile (seconds) linearly within the
// bucket that holds it, as Prometheus's histogram_quantile does.
func quantile(bounds []float64, cum []uint64, count uint64, q float64) float64 {
	rank := q * float64(count)
	lower, below := 0.0, uint64(0)
	for i, c := range cum {
		if float64(c) >= rank && c > below {
			return lower + (bounds[i]-lower)*(rank-float64(below))/float64(c-below)
		}
		lower, below = bounds[i], c
	}
	return lower // above the last bound
}

// WriteBreakdowns writes the per-stage table of every run that has one.
func WriteBreakdowns(w io.Writer, runs []Result) error {
	for i := range runs {
		r := &runs[i]
		if r.Breakdown == nil {
			continue
		}
		fmt.Fprintf(w, "breakdown (%s): time per stage inside the server, over the run\n", runLabel(r))
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, strings.Join([]string{"stage", "count", "mean ms", "p50 ms", "p99 ms"}, "\t")+"\t")
		for _, s := range r.Breakdown.Stages {
			fmt.Fprintf(tw, "%s\t%d\t%.4f\t%.4f\t%.4f\t\n", s.Stage, s.Count, s.MeanMS, s.P50MS, s.P99MS)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	return nil
}
