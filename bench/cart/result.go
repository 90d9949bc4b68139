package cart

import (
	"slices"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"allot/bench"
)

// fill copies the measurements and the check into res.
func (r *run) fill(res *bench.Result, c *checked) {
	res.Ops = r.doneN.Load()
	res.Seconds = r.elapsed.Seconds()
	if res.Seconds > 0 {
		res.OpsPerSec = float64(res.Ops) / res.Seconds
	}
	h := hdrhistogram.New(1, int64(3600e9), 3)
	var maxNS int64
	for k, part := range r.latency {
		h.Merge(part)
		maxNS = max(maxNS, r.latMax[k])
	}
	if h.TotalCount() > 0 {
		res.LatencyMS = bench.LatencyOf(h, maxNS)
		if b, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase); err == nil {
			res.Histogram, res.HistogramUnit = string(b), "ns"
		}
	}
	res.Errors = r.errors
	res.ConflictRetries = r.conflicts
	res.ErrorSamples = r.errorSamples
	for _, s := range r.lag.stuck {
		c.v.addf("%s", s)
	}
	c.v.res.OK = c.v.res.ViolationCount == 0
	if c.v.res.Violations == nil {
		c.v.res.Violations = []string{}
	}
	res.Check = c.v.res
	res.Status = bench.StatusOK
	if !res.Check.OK {
		res.Status = bench.StatusCheckFailed
	}
	unit := "carts"
	if r.mode == ModeOrder {
		unit = "orders"
	}
	x := res.Extra
	x[unit+"_per_sec"] = res.OpsPerSec
	x["latency_p99_ms"] = res.LatencyMS.P99
	x["lines"] = r.w.Params.Lines
	x["resends"] = c.resends
	x["duplicates"] = c.duplicates
	x["units_missing"] = c.unitsMissing
	x["units_extra"] = c.unitsExtra
	x["insufficient"] = c.insufficient
	x["unknown_outcome"] = c.unknown
	if r.pipelined() {
		var rounds, calls int64
		for _, p := range r.pipe {
			rounds, calls = rounds+p.rounds, calls+p.calls
		}
		x["pipeline_rounds"] = rounds
		if rounds > 0 {
			x["pipeline_calls_per_round"] = float64(calls) / float64(rounds)
		}
	}
	if r.mode == ModeCheckout {
		x["ttl_ms"] = float64(r.opt.TTL) / 1e6
		x["confirmed"] = c.confirmed
		x["cancelled"] = c.cancelled
		x["expired"] = c.expired
		lags := slices.Clone(r.lag.lagsMS)
		slices.Sort(lags)
		x["expiry_lag_samples"] = len(lags)
		x["expiry_lag_unsampled"] = r.lag.skipped
		x["expiry_poll_ms"] = float64(r.opt.Poll) / 1e6
		if len(lags) > 0 {
			x["expiry_lag_p50_ms"] = quantile(lags, 0.50)
			x["expiry_lag_p99_ms"] = quantile(lags, 0.99)
			x["expiry_lag_max_ms"] = lags[len(lags)-1]
		}
	}
}

// quantile of sorted values, nearest rank.
func quantile(sorted []float64, q float64) float64 {
	i := int(q*float64(len(sorted))+0.999999) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
