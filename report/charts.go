package report

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"allot/bench"
)

// chartSet is the data the page's script draws, marshalled into the page as
// JSON. Axes are in the units the labels name (seconds, ops/s, ms).
type chartSet struct {
	Throughput []chart `json:"throughput"`
	Spectrum   []chart `json:"spectrum"`
	Sweeps     []chart `json:"sweeps"`
	// Notes say what could not be drawn and why; they go in the page, not
	// the data.
	Notes []string `json:"-"`
}

// chart is one uPlot chart: a shared x axis and one y array per series, as
// uPlot's aligned data wants; a missing point is null.
type chart struct {
	ID      string   `json:"id"`
	Title   string   `json:"title"`
	Caption string   `json:"-"`
	Kind    string   `json:"kind"` // throughput, spectrum, sweep
	XLabel  string   `json:"xLabel"`
	YLabel  string   `json:"yLabel"`
	YUnit   string   `json:"yUnit"` // "ops/s" or "ms"
	X       floats   `json:"x"`
	XTicks  floats   `json:"xTicks,omitempty"`
	LogX    bool     `json:"logX"`
	LogY    bool     `json:"logY"`
	Series  []series `json:"series"`
}

type series struct {
	Label string `json:"label"`
	Color int    `json:"color"`
	Dash  bool   `json:"dash,omitempty"`
	Y     floats `json:"y"`
}

// floats marshals NaN and infinities as null, which JSON lacks and uPlot
// reads as a gap.
type floats []float64

func (fs floats) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 2+8*len(fs))
	b = append(b, '[')
	for i, f := range fs {
		if i > 0 {
			b = append(b, ',')
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			b = append(b, "null"...)
			continue
		}
		b = strconv.AppendFloat(b, f, 'g', 6, 64)
	}
	return append(b, ']'), nil
}

// runGroup is the runs drawn in one chart: all runs of one sweep point, or
// all runs outside sweeps.
type runGroup struct {
	title string
	runs  []int // indexes into the file's runs
}

// groupRuns groups runs by sweep point, runs outside sweeps first, points in
// order of parameter and value.
func groupRuns(runs []bench.Result) []runGroup {
	type key struct {
		param string
		value float64
		label string
	}
	byKey := map[key]*runGroup{}
	var keys []key
	for i := range runs {
		var k key
		if s := runs[i].Sweep; s != nil {
			k = key{s.Param, s.Value, s.Label}
		}
		g, ok := byKey[k]
		if !ok {
			title := "All runs"
			if k.label != "" {
				title = k.label
			}
			g = &runGroup{title: title}
			byKey[k] = g
			keys = append(keys, k)
		}
		g.runs = append(g.runs, i)
	}
	sort.SliceStable(keys, func(a, b int) bool {
		if keys[a].param != keys[b].param {
			return keys[a].param < keys[b].param
		}
		return keys[a].value < keys[b].value
	})
	out := make([]runGroup, len(keys))
	for i, k := range keys {
		out[i] = *byKey[k]
	}
	return out
}

func subset(runs []bench.Result, idx []int) []bench.Result {
	out := make([]bench.Result, len(idx))
	for i, j := range idx {
		out[i] = runs[j]
	}
	return out
}

func newChartSet(f *bench.ResultsFile, colors map[string]int) *chartSet {
	cs := &chartSet{Throughput: []chart{}, Spectrum: []chart{}, Sweeps: []chart{}}
	for gi, g := range groupRuns(f.Runs) {
		runs := subset(f.Runs, g.runs)
		// The chart holds a value per series per second of its longest
		// run (and one more for a folded end).
		longest, drawn := 0, 0
		for i := range runs {
			runs[i].Throughput = foldThroughput(runs[i].Throughput)
			if len(runs[i].Throughput) > 0 {
				longest = max(longest, len(runs[i].Throughput)+1)
				drawn++
			}
		}
		cells := longest * drawn
		labels := runLabels(runs, "sweep")
		// These charts draw a run that failed its check or had ops fail
		// (the sweep curves leave it out): its label says so.
		failedNote := ""
		for i := range runs {
			if failed(&runs[i]) {
				labels[i] += failedMark
				failedNote = " A label ending “" + failedMark[1:] + "” is a run that did not pass (its check failed or some of its ops failed): see Checks."
			}
		}
		if cells > throughputCellsMax {
			cs.Notes = append(cs.Notes, fmt.Sprintf("Throughput over time — %s: not drawn: its %s runs of up to %s seconds take %s per-second values, over the %s one chart draws.",
				g.title, intText(int64(drawn)), intText(int64(longest-1)), intText(int64(cells)), intText(throughputCellsMax)))
		} else if c, ok := throughputChart(runs, labels, colors); ok {
			c.ID = "throughput-" + strconv.Itoa(gi)
			c.Title = "Throughput over time — " + g.title
			c.Caption += failedNote
			cs.Throughput = append(cs.Throughput, c)
		}
		c, notes := spectrumChart(runs, labels, colors, g.runs)
		cs.Notes = append(cs.Notes, notes...)
		if len(c.Series) > 0 {
			c.ID = "spectrum-" + strconv.Itoa(gi)
			c.Title = "Latency by percentile — " + g.title
			c.Caption += failedNote
			cs.Spectrum = append(cs.Spectrum, c)
		}
	}
	cs.Sweeps = sweepCharts(f.Runs, colors)
	return cs
}

// throughputCellsMax bounds the per-second counts one throughput chart
// draws (its runs' counts, at most bench.ThroughputSecondsMax each): the
// chart holds one value per run per second of its longest run, so a group
// of many runs beside one long one took memory and page bytes by their
// product. 200 runs of an hour each fit.
const throughputCellsMax = 200 * (bench.ThroughputSecondsMax + 1)

// foldThroughput returns counts as the bench records them, at most
// bench.ThroughputSecondsMax, the later seconds' ops counted in the last
// one (bench.Result.Throughput). The bench never writes more, but a
// results file is input: a hand-made one with millions of seconds made
// every run of its chart as long, gigabytes of page from a few megabytes
// of file.
func foldThroughput(counts []int64) []int64 {
	n := bench.ThroughputSecondsMax
	if len(counts) <= n {
		return counts
	}
	out := slices.Clone(counts[:n])
	for _, v := range counts[n:] {
		out[n-1] += v
	}
	return out
}

// otherLatencyNote says what a latency sample is when some run is not of
// the reservation workload.
const otherLatencyNote = "A closed-loop sample of the reservation workload is one store call; a sample of another workload is one of its ops as that workload counts it " +
	"(a checkout cart: its hold, then its confirm or cancel, with any re-sends; an order; a search query; a request), which may take several store calls."

// anyOtherWorkload says whether some run is not of the reservation workload.
func anyOtherWorkload(runs []bench.Result) bool {
	return slices.ContainsFunc(runs, func(r bench.Result) bool { return !reservationRun(&r) })
}

// failedMark ends the chart label of a run that did not pass.
const failedMark = " (failed)"

// throughputChart draws ops completed per second, one series per run. A
// run's folded last bucket (see folded) is drawn flat at its average
// rate from its first second to the run's end: one more x, the run's
// end, rather than a point per folded second.
func throughputChart(runs []bench.Result, labels []string, colors map[string]int) (chart, bool) {
	c := chart{Kind: "throughput", XLabel: "seconds since the first op", YLabel: "ops/s", YUnit: "ops/s",
		Caption: "Each point is the ops completed in one second of the run. A run's last second is usually cut short: " +
			"it is shown as ops per second over the part that ran when that part lasted at least half a second, and left out otherwise, " +
			"so that a run ending a few milliseconds into a second does not look like a collapse."}
	rates := make([][]float64, len(runs))
	ends := make([]float64, len(runs)) // a folded run's last x, else 0
	longest := 0
	var xs []float64 // the folded runs' ends
	for i := range runs {
		rates[i] = perSecond(&runs[i])
		longest = max(longest, len(rates[i]))
		if end, ok := folded(&runs[i]); ok {
			ends[i] = end
			xs = append(xs, end)
			c.Caption += fmt.Sprintf(" %s: seconds %s to %s are folded into one count (a result keeps %s seconds one by one), drawn flat at their average rate.",
				labels[i], intText(int64(len(runs[i].Throughput))), intText(int64(end)), intText(bench.ThroughputSecondsMax))
		}
	}
	if longest == 0 {
		return c, false
	}
	for i := range longest {
		xs = append(xs, float64(i+1))
	}
	sort.Float64s(xs)
	c.X = slices.Compact(xs)
	for i := range runs {
		if len(rates[i]) == 0 {
			continue
		}
		y := nanFloats(len(c.X))
		for j, x := range c.X {
			switch n := len(rates[i]); {
			case ends[i] > 0 && x >= float64(n) && x <= ends[i]:
				y[j] = rates[i][n-1]
			case x <= float64(n):
				y[j] = rates[i][int(x)-1]
			}
		}
		c.Series = append(c.Series, series{Label: labels[i], Color: colors[runs[i].Store], Y: y})
	}
	if spread(runs) >= throughputLogRatio {
		c.LogY = true
		c.YLabel += " (log scale)"
		c.Caption += " The y axis is logarithmic because the runs differ by more than " + strconv.Itoa(throughputLogRatio) + "× in ops/s."
	}
	return c, true
}

// partialSecondMin is the shortest final partial second drawn: over less,
// a handful of ops makes a wild rate.
const partialSecondMin = 0.5

// folded reports whether r's last per-second count holds more than its
// second: a run longer than bench.ThroughputSecondsMax folds its later
// seconds into the last count. end is the run's last second (rounded
// up), the x where the folded bucket's flat line ends.
func folded(r *bench.Result) (end float64, ok bool) {
	n := len(r.Throughput)
	if n != bench.ThroughputSecondsMax || !(r.Seconds-float64(n-1) > 1) {
		return 0, false
	}
	return math.Ceil(r.Seconds), true
}

// perSecond turns a run's per-second counts into rates. Every bucket but
// the last covers a whole second; the last covers what is left of
// r.Seconds: the rest of the run when it is folded (folded), else at most
// a second. It is scaled to a rate over that, or dropped when too short
// (unless it is the run's only bucket).
func perSecond(r *bench.Result) []float64 {
	n := len(r.Throughput)
	if n == 0 {
		return nil
	}
	out := make([]float64, n)
	for i, v := range r.Throughput {
		out[i] = float64(v)
	}
	last := r.Seconds - float64(n-1)
	if _, ok := folded(r); ok {
		out[n-1] /= last
		return out
	}
	switch {
	case last >= 1 || last <= 0 || math.IsNaN(last):
		// A whole last second, or Seconds disagrees with the series: show
		// the counts as they are.
	case last >= partialSecondMin || n == 1:
		out[n-1] /= last
	default:
		out = out[:n-1]
	}
	return out
}

// throughputLogRatio is the spread of ops/s across a chart's runs beyond
// which a linear axis would flatten the slower stores into the x axis.
const throughputLogRatio = 20

// spread is the ratio of the fastest run's ops/s to the slowest's.
func spread(runs []bench.Result) float64 {
	lo, hi := math.Inf(1), 0.0
	for i := range runs {
		if v := runs[i].OpsPerSec; v > 0 {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	if hi == 0 {
		return 1
	}
	return hi / lo
}

// spectrumChart draws latency against percentile on the HDR axis, one
// series per run, plus a dashed service-time series for open-loop runs.
// fileIdx maps runs back to their numbers in the file for notes.
func spectrumChart(runs []bench.Result, labels []string, colors map[string]int, fileIdx []int) (chart, []string) {
	c := chart{Kind: "spectrum", XLabel: "percentile", YLabel: "latency (ms, log scale)", YUnit: "ms", LogX: true, LogY: true,
		Caption: "HDR percentile spectrum: each step right adds a nine (90%, 99%, 99.9%, …); a curve ends where its run has no more samples, at its maximum. " +
			"Closed-loop runs show the time of each store call."}
	if anyOtherWorkload(runs) {
		c.Caption = strings.TrimSuffix(c.Caption, "Closed-loop runs show the time of each store call.") + otherLatencyNote
	}
	// Each histogram is read as it is decoded, at every position of the
	// longest axis, and let go: the chart's axis is a prefix of that one
	// (spectrumAxis), and holding every run's decoded counts until the
	// longest is known took their memory all at once.
	full := spectrumAxis(math.MaxInt64)
	type decoded struct {
		run    int
		label  string
		dash   bool
		values []float64
	}
	var ds []decoded
	var notes []string
	var countMax int64
	add := func(i int, label, encoded, unit string, dash bool, maxMS float64) {
		if encoded == "" {
			return
		}
		s, err := decodeSpectrum(encoded, unit)
		if err != nil {
			notes = append(notes, fmt.Sprintf("Run %d (%s): latency histogram not drawn: %v", fileIdx[i]+1, labels[i], err))
			return
		}
		if s.counts == 0 {
			return
		}
		s.maxMS = maxMS
		countMax = max(countMax, s.counts)
		ds = append(ds, decoded{run: i, label: label, dash: dash, values: s.valuesMS(full)})
	}
	for i := range runs {
		r := &runs[i]
		if r.OpenLoop != nil {
			add(i, labels[i]+" (response)", r.Histogram, r.HistogramUnit, false, r.LatencyMS.Max)
			add(i, labels[i]+" (service)", r.OpenLoop.ServiceHistogram, r.HistogramUnit, true, r.OpenLoop.ServiceMS.Max)
			continue
		}
		add(i, labels[i], r.Histogram, r.HistogramUnit, false, r.LatencyMS.Max)
	}
	for _, d := range ds {
		if d.dash {
			c.Caption += " Open-loop runs show the response time from each op's intended start (solid) and the service time from its actual send (dashed)."
			break
		}
	}
	c.X = spectrumAxis(countMax)
	for _, d := range ds {
		c.Series = append(c.Series, series{Label: d.label, Color: colors[runs[d.run].Store], Dash: d.dash, Y: d.values[:len(c.X)]})
	}
	return c, notes
}

// sweepCharts draws, for each swept parameter, ops/s and p99 against the
// parameter's values, one series per store (and whatever else varies).
func sweepCharts(all []bench.Result, colors map[string]int) []chart {
	byParam := map[string][]int{}
	var params []string
	for i := range all {
		if s := all[i].Sweep; s != nil {
			if _, ok := byParam[s.Param]; !ok {
				params = append(params, s.Param)
			}
			byParam[s.Param] = append(byParam[s.Param], i)
		}
	}
	sort.Strings(params)
	var out []chart
	for pi, param := range params {
		runs := subset(all, byParam[param])
		// One series per label: the runs of one store at each point. A
		// second run of the same store at the same point starts series "#2".
		labels := baseLabels(runs, "sweep")
		atPoint := map[string]int{}
		for i := range runs {
			k := labels[i] + "\x00" + strconv.FormatFloat(runs[i].Sweep.Value, 'g', -1, 64)
			atPoint[k]++
			if n := atPoint[k]; n > 1 {
				labels[i] += " #" + strconv.Itoa(n)
			}
		}
		var xs []float64
		seen := map[float64]bool{}
		for i := range runs {
			if v := runs[i].Sweep.Value; !seen[v] {
				seen[v] = true
				xs = append(xs, v)
			}
		}
		sort.Float64s(xs)
		logX := xs[0] > 0 && xs[len(xs)-1]/xs[0] >= 8
		opsChart := chart{ID: fmt.Sprintf("sweep-%d-ops", pi), Kind: "sweep", Title: "Throughput vs " + param,
			XLabel: param, YLabel: "ops/s", YUnit: "ops/s", X: xs, XTicks: xs, LogX: logX,
			Caption: "Each point is one run at that value of " + param + "; a missing point is a run that failed or did not run."}
		p99Chart := chart{ID: fmt.Sprintf("sweep-%d-p99", pi), Kind: "sweep", Title: "p99 latency vs " + param,
			XLabel: param, YLabel: "p99 latency (ms, log scale)", YUnit: "ms", X: xs, XTicks: xs, LogX: logX, LogY: true,
			Caption: "p99 of the time of each store call."}
		if anyOtherWorkload(runs) {
			p99Chart.Caption = "p99 latency. " + otherLatencyNote
		}
		bySeries := map[string]int{}
		serviceSeries := map[string]int{} // label -> index in p99Chart.Series
		for i := range runs {
			r := &runs[i]
			si, ok := bySeries[labels[i]]
			if !ok {
				si = len(opsChart.Series)
				bySeries[labels[i]] = si
				opsChart.Series = append(opsChart.Series, series{Label: labels[i], Color: colors[r.Store], Y: nanFloats(len(xs))})
				p99Chart.Series = append(p99Chart.Series, series{Label: labels[i], Color: colors[r.Store], Y: nanFloats(len(xs))})
			}
			// A run that failed its check or had ops fail is no point of
			// the curve: the caption says a missing point is a failed run.
			if failed(r) || r.Ops == 0 {
				continue
			}
			xi := sort.SearchFloat64s(xs, r.Sweep.Value)
			opsChart.Series[si].Y[xi] = r.OpsPerSec
			if r.LatencyMS.P99 > 0 {
				p99Chart.Series[si].Y[xi] = r.LatencyMS.P99
			}
			if r.OpenLoop != nil && r.OpenLoop.ServiceMS.P99 > 0 {
				ssi, ok := serviceSeries[labels[i]]
				if !ok {
					ssi = len(p99Chart.Series)
					serviceSeries[labels[i]] = ssi
					p99Chart.Series = append(p99Chart.Series, series{Label: labels[i] + " (service)", Color: colors[r.Store], Dash: true, Y: nanFloats(len(xs))})
				}
				p99Chart.Series[ssi].Y[xi] = r.OpenLoop.ServiceMS.P99
			}
		}
		if len(serviceSeries) > 0 {
			p99Chart.Caption = "p99 of the store call time for closed-loop runs; for open-loop runs, p99 of the response time from each op's intended start (solid) and of the service time from its actual send (dashed)."
			if anyOtherWorkload(runs) {
				p99Chart.Caption = "p99 latency; for open-loop runs, of the response time from each op's intended start (solid) and of the service time from its actual send (dashed). " + otherLatencyNote
			}
		}
		if spread(runs) >= throughputLogRatio {
			opsChart.LogY = true
			opsChart.YLabel += " (log scale)"
			opsChart.Caption += " The y axis is logarithmic because the runs differ by more than " + strconv.Itoa(throughputLogRatio) + "× in ops/s."
		}
		out = append(out, opsChart, p99Chart)
	}
	return out
}

func nanFloats(n int) floats {
	f := make(floats, n)
	for i := range f {
		f[i] = math.NaN()
	}
	return f
}
