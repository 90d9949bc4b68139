package bench

import (
	"fmt"
	"io"
	"slices"
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
	// Where a quantile lies above the last bucket's bound (about a second
	// for the server's stages) the histogram cannot place it: the figure
	// is that bound, a floor, and P50Above or P99Above says so (the table
	// prints it as ">bound").
	P50MS    float64 `json:"p50_ms"`
	P99MS    float64 `json:"p99_ms"`
	P50Above bool    `json:"p50_above_range,omitempty"`
	P99Above bool    `json:"p99_above_range,omitempty"`
	// Note, when set, says why the stage has no figures: its histograms
	// before and after the run cannot be subtracted.
	Note string `json:"note,omitempty"`
}

// Notes of a stage whose histograms before and after the run cannot be
// subtracted. They name what happened, not figures: any figure from such
// a pair would be wrong.
const (
	// A server restarted during the run counts from zero again: in
	// unsigned integers, after - before wrapped to counts near 2^64.
	noteCountsDown = "the server's counts went down during the run (did it restart?): no figures"
	// Other bucket bounds (another build of the server) cannot be
	// subtracted bucket by bucket; the figures of after alone would cover
	// the server's whole life as if it were the run.
	noteBucketsChanged = "the server's buckets for this stage changed during the run (another build?): no figures"
)

// NewBreakdown returns after - before, stage by stage (stages are matched
// by name; one missing before counts from zero). A stage whose
// histograms cannot be subtracted, its counts lower after than before or
// its buckets changed, has a Note saying so and no figures.
func NewBreakdown(before, after Stages) *Breakdown {
	b := &Breakdown{}
	for _, a := range after {
		counts, count, sum, note := a.Counts, a.Count, a.Sum, ""
		for _, p := range before {
			if p.Stage == a.Stage {
				counts, count, sum, note = subtract(a, p)
				break
			}
		}
		st := StageTime{Stage: a.Stage, Note: note}
		if note == "" {
			st.Count = count
		}
		if note == "" && count > 0 {
			st.MeanMS = 1e3 * sum / float64(count)
			p50, above50 := quantile(a.Bounds, counts, count, 0.50)
			p99, above99 := quantile(a.Bounds, counts, count, 0.99)
			st.P50MS, st.P50Above = 1e3*p50, above50
			st.P99MS, st.P99Above = 1e3*p99, above99
		}
		b.Stages = append(b.Stages, st)
	}
	return b
}

// subtract returns after - before of one stage, or a note saying why
// they cannot be subtracted.
func subtract(after, before store.StageHistogram) (counts []uint64, count uint64, sum float64, note string) {
	if !slices.Equal(after.Bounds, before.Bounds) || len(after.Counts) != len(before.Counts) {
		return nil, 0, 0, noteBucketsChanged
	}
	if after.Count < before.Count || after.Sum < before.Sum {
		return nil, 0, 0, noteCountsDown
	}
	counts = make([]uint64, len(after.Counts))
	for i := range counts {
		if after.Counts[i] < before.Counts[i] {
			return nil, 0, 0, noteCountsDown
		}
		counts[i] = after.Counts[i] - before.Counts[i]
	}
	return counts, after.Count - before.Count, after.Sum - before.Sum, ""
}

// quantile interpolates the q-quantile (seconds) linearly within the
// bucket that holds it, as Prometheus's histogram_quantile does. A
// quantile above the last bound is that bound, with above set: the
// samples there have no upper bound to interpolate to.
func quantile(bounds []float64, cum []uint64, count uint64, q float64) (v float64, above bool) {
	rank := q * float64(count)
	lower, below := 0.0, uint64(0)
	for i, c := range cum {
		if float64(c) >= rank && c > below {
			return lower + (bounds[i]-lower)*(rank-float64(below))/float64(c-below), false
		}
		lower, below = bounds[i], c
	}
	return lower, true
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
		var notes []string
		for _, s := range r.Breakdown.Stages {
			if s.Note != "" {
				fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t\n", s.Stage)
				notes = append(notes, s.Stage+": "+s.Note)
				continue
			}
			fmt.Fprintf(tw, "%s\t%d\t%.4f\t%s\t%s\t\n", s.Stage, s.Count, s.MeanMS, stageMS(s.P50MS, s.P50Above), stageMS(s.P99MS, s.P99Above))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		for _, n := range notes {
			fmt.Fprintln(w, n)
		}
		fmt.Fprintln(w)
	}
	return nil
}

// stageMS formats a stage quantile; one above the histogram's range is
// its last bound with ">" before it, not a figure to read as exact.
func stageMS(v float64, above bool) string {
	if above {
		return fmt.Sprintf(">%.4f", v)
	}
	return fmt.Sprintf("%.4f", v)
}
