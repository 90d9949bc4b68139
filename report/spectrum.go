package report

import (
	"fmt"
	"math"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// spectrumPointsPerDecade is how finely the percentile axis is sampled: 20
// points between 90% and 99%, 20 between 99% and 99.9%, and so on, which
// draws a smooth curve without bloating the page.
const spectrumPointsPerDecade = 20

// spectrumDecadesMax bounds the axis at 99.99999%: beyond that even a run of
// ten million ops has no samples.
const spectrumDecadesMax = 7

// unitToMS converts a histogram unit to milliseconds.
func unitToMS(unit string) (float64, error) {
	switch unit {
	case "ns":
		return 1e-6, nil
	case "us", "µs", "μs":
		return 1e-3, nil
	case "ms":
		return 1, nil
	case "s":
		return 1e3, nil
	}
	return 0, fmt.Errorf("report: unknown histogram unit %q (want ns, us, ms or s)", unit)
}

// spectrum is one decoded latency histogram.
type spectrum struct {
	hist   *hdrhistogram.Histogram
	scale  float64 // unit to ms
	counts int64
}

// decodeSpectrum decodes a histogram as bench encodes it (hdrhistogram-go
// Encode, V2 compressed, base64).
func decodeSpectrum(encoded, unit string) (*spectrum, error) {
	scale, err := unitToMS(unit)
	if err != nil {
		return nil, err
	}
	h, err := hdrhistogram.Decode([]byte(encoded))
	if err != nil {
		return nil, fmt.Errorf("report: decoding latency histogram: %w", err)
	}
	return &spectrum{hist: h, scale: scale, counts: h.TotalCount()}, nil
}

// spectrumAxis returns the x positions of the HDR percentile axis: x is
// 1/(1-q) for quantile q, so x=1 is 0%, 10 is 90%, 100 is 99%, and each
// decade of x is one more nine. It reaches the first point at or past
// countMax, where the quantile's value is the histogram's maximum.
func spectrumAxis(countMax int64) []float64 {
	var xs []float64
	if countMax < 1 {
		return xs
	}
	limit := math.Min(float64(countMax), math.Pow(10, spectrumDecadesMax))
	for i := 0; ; i++ {
		x := math.Pow(10, float64(i)/spectrumPointsPerDecade)
		xs = append(xs, x)
		if x >= limit {
			return xs
		}
	}
}

// percentileOf is the percentile (0..100) at axis position x.
func percentileOf(x float64) float64 { return 100 * (1 - 1/x) }

// valuesMS returns the latency in ms at each axis position, NaN past the
// histogram's own count (there it has no samples to say anything).
func (s *spectrum) valuesMS(xs []float64) []float64 {
	out := make([]float64, len(xs))
	pcts := make([]float64, len(xs))
	for i, x := range xs {
		pcts[i] = percentileOf(x)
	}
	vals := s.hist.ValueAtPercentiles(pcts)
	for i, x := range xs {
		switch {
		case s.counts == 0:
			out[i] = math.NaN()
		case i > 0 && xs[i-1] >= float64(s.counts):
			out[i] = math.NaN()
		case x >= float64(s.counts):
			// The last sampled position: its quantile is the maximum.
			out[i] = float64(s.hist.Max()) * s.scale
		default:
			out[i] = float64(vals[pcts[i]]) * s.scale
		}
	}
	return out
}
