package report

import (
	"math"
	"strconv"

	"allot/bench"
)

// boundRow is a durable run beside the closed-loop limit the bench measured
// on the machine before it (bench.Bound): ops in flight / fdatasync, and
// ops in flight / (fdatasync + round trip). A durable figure is only good
// or bad against these, never against a run in another mode; the terminal
// table prints the same under the table (bench.WriteBounds).
type boundRow struct {
	Number    int
	Label     string
	Color     int
	Fsync     string
	RTT       string
	InFlight  string
	BoundOps  string // "130,376 / 130,376"
	Unit      string // "ops/s", or "durable calls/s" when ops are not one call each
	Measured  string
	Share     string // "31% / 31%", "" when the ops/s is no share of the bound
	NoShare   string // why there is no share
	Failed    bool
	FsyncNote string
}

// newBoundRows lists the runs of f that recorded a bound, in file order.
// A run that never happened has none to read against.
func newBoundRows(runs []bench.Result, views []runView) []boundRow {
	var out []boundRow
	for i := range runs {
		r := &runs[i]
		b := bench.BoundOf(r)
		if b == nil {
			continue
		}
		row := boundRow{
			Number:   views[i].Number,
			Label:    views[i].Label,
			Color:    views[i].Color,
			Fsync:    msText(b.FsyncP50MS) + " ms",
			InFlight: intText(int64(b.InFlightOps())),
			BoundOps: rateText(b.OpsPerSecFsync) + " / " + rateText(b.OpsPerSecFsyncRTT),
			Unit:     "ops/s",
			Measured: rateText(r.OpsPerSec),
			Failed:   !views[i].StatusOK,
		}
		if b.FsyncSamples > 0 {
			row.FsyncNote = "median of " + intText(int64(b.FsyncSamples)) + " write + fdatasync calls of 4 KiB in " + b.Dir
		}
		switch {
		case b.RTTSamples > 0:
			row.RTT = msText(b.RTTP50MS) + " ms"
		case b.InProcess:
			row.RTT = "none (in process)"
		default:
			row.RTT = "not measured (the store has no PING)"
		}
		if why := bench.BoundShareNote(r); why != "" {
			row.Unit = "durable calls/s"
			row.NoShare = why
		} else if b.OpsPerSecFsync > 0 && b.OpsPerSecFsyncRTT > 0 {
			ofFsync, ofFsyncRTT := b.Share(r.OpsPerSec)
			row.Share = pctText(ofFsync) + " / " + pctText(ofFsyncRTT)
		}
		out = append(out, row)
	}
	return out
}

// rateText is a rate in whole units with thousands separators.
func rateText(v float64) string {
	if math.IsNaN(v) || math.Abs(v) > 1e18 {
		return "—"
	}
	return intText(int64(math.Round(v)))
}

func pctText(f float64) string {
	if math.IsNaN(f) || math.Abs(f) > 1e12 {
		return "—"
	}
	return strconv.FormatFloat(100*f, 'f', 0, 64) + "%"
}
