package bench

import (
	"math/bits"
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
//
// A percentile is the nearest rank, ceil(q*n), as in HdrHistogram's
// reference: the smallest value that at least q% of the samples are at
// or below. hdrhistogram-go rounds q*n to the nearest instead, one sample
// short of the tail whenever its fraction is below a half (p99 of 70
// samples was the 69th, below the slowest 1.4%); the rank is computed
// here and handed to it as a percentile it cannot round off.
func LatencyOf(h *hdrhistogram.Histogram, maxNS int64) Latency {
	n := h.TotalCount()
	if n == 0 {
		return Latency{}
	}
	at := func(per10k uint64) float64 {
		// rank = ceil(n * per10k / 10000), exactly: hi is below 10000.
		hi, lo := bits.Mul64(uint64(n), per10k)
		rank, rem := bits.Div64(hi, lo, 10000)
		if rem != 0 {
			rank++
		}
		// hdrhistogram-go takes int64(p/100*n + 0.5) as the count: for
		// p = 100*rank/n that is rank, the float error being far below
		// the half it adds.
		v := h.ValueAtPercentile(100 * float64(rank) / float64(n))
		return nsToMS(min(v, maxNS))
	}
	return Latency{
		P50:  at(5000),
		P99:  at(9900),
		P999: at(9990),
		Max:  nsToMS(maxNS),
	}
}

// encode returns the histogram as hdrhistogram-go's Encode writes it (V2
// compressed, base64), the form the results file and the report use.
func (m merged) encode() (string, error) {
	b, err := m.h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	return string(b), err
}
