package bench

import (
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Latency histograms record nanoseconds, from 1 ns to a week, to 3
// significant digits: exact below 2 µs (the memory store's calls take a
// few hundred nanoseconds, and microsecond buckets would flatten them to 0
// or 1), within 0.1% above. Such a histogram takes about 340 KB; one per
// worker avoids any sharing on the hot path, and they are merged once at
// the end. The range is a week, not an hour, because an open-loop op's
// response time grows with the run when the store is slower than the rate:
// a run of a few hours must show its queueing in p99, not an hour's
// ceiling (an hour's range would save 65 KB per worker). Values above a
// week are recorded as a week; the exact maximum is kept beside.
const (
	histogramUnit    = "ns"
	histogramLowest  = 1
	histogramHighest = int64(7 * 24 * time.Hour)
	histogramDigits  = 3
)

func newHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(histogramLowest, histogramHighest, histogramDigits)
}

// latencyRecorder is one worker's histogram and its exact maximum.
type latencyRecorder struct {
	h   *hdrhistogram.Histogram
	max int64
}

func newLatencyRecorder() latencyRecorder { return latencyRecorder{h: newHistogram()} }

func (l *latencyRecorder) record(d time.Duration) {
	v := int64(d)
	if v > l.max {
		l.max = v
	}
	switch {
	case v < histogramLowest:
		v = histogramLowest
	case v > histogramHighest:
		v = histogramHighest
	}
	l.h.RecordValue(v) // in range by construction: cannot fail
}

// merged is several workers' latencies together.
type merged struct {
	h   *hdrhistogram.Histogram
	max int64
}

func merge(parts []*latencyRecorder) merged {
	m := merged{h: newHistogram()}
	for _, p := range parts {
		m.h.Merge(p.h)
		m.max = max(m.max, p.max)
	}
	return m
}

func nsToMS(v int64) float64 { return float64(v) / 1e6 }

// latency returns the percentiles (LatencyOf).
func (m merged) latency() Latency { return LatencyOf(m.h, m.max) }

// LatencyOf returns the percentiles of h, a histogram of nanoseconds, and
// maxNS, the exact maximum recorded beside it. Every workload computes its
// figures here, so that the table, the JSON and the report agree. The
// maximum is the exact one, not the histogram's rounded bucket. The
// histogram answers a quantile with the top of the bucket holding it,
// which can lie above every sample when the slowest ones share the
// maximum's bucket; no percentile is above the maximum, so each is capped
// at it. An empty histogram gives zeros.
func LatencyOf(h *hdrhistogram.Histogram, maxNS int64) Latency {
	if h.TotalCount() == 0 {
		return Latency{}
	}
	at := func(q float64) float64 { return nsToMS(min(h.ValueAtQuantile(q), maxNS)) }
	return Latency{
		P50:  at(50),
		P99:  at(99),
		P999: at(99.9),
		Max:  nsToMS(maxNS),
	}
}

// encode returns the histogram as hdrhistogram-go's Encode writes it (V2
// compressed, base64), the form the results file and the report use.
func (m merged) encode() (string, error) {
	b, err := m.h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	return string(b), err
}
