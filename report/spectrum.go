package report

import (
	"bytes"
	"compress/zlib"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"slices"

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
	// maxMS is the run's exact maximum (the table's), 0 when unknown. The
	// histogram knows the maximum only as the top of its bucket, up to
	// 0.1% above it (or its range's ceiling, for a sample beyond it): the
	// curve ends at maxMS and stays at or below it, as the table's
	// percentiles do.
	maxMS float64
}

// histogramEncodedMax bounds an encoded histogram. The bench's are a few
// kilobytes (a 3-digit histogram up to a minute is about 270 KB before
// compression); the bound keeps a corrupt or hostile file from making the
// decoder inflate hundreds of megabytes.
const histogramEncodedMax = 1 << 20

// decodeSpectrum decodes a histogram as bench encodes it (hdrhistogram-go
// Encode, V2 compressed, base64).
func decodeSpectrum(encoded, unit string) (*spectrum, error) {
	scale, err := unitToMS(unit)
	if err != nil {
		return nil, err
	}
	if len(encoded) > histogramEncodedMax {
		return nil, fmt.Errorf("report: latency histogram of %d bytes is over the %d-byte limit", len(encoded), histogramEncodedMax)
	}
	h, err := decodeHistogram(encoded)
	if err != nil {
		return nil, fmt.Errorf("report: decoding latency histogram: %w", err)
	}
	return &spectrum{hist: h, scale: scale, counts: h.TotalCount()}, nil
}

// decodeHistogram calls hdrhistogram.Decode after checking what v1.1.2
// trusts blindly: it indexes into its input without checking its length
// (a panic, recovered here as an error), and it sizes the histogram from
// the header's lowest and highest trackable values, looping forever when a
// large lowest value overflows its bucket arithmetic (found by
// FuzzDecodeResults). checkHistogramHeader rejects those headers first.
func decodeHistogram(encoded string) (h *hdrhistogram.Histogram, err error) {
	if err := checkHistogramHeader(encoded); err != nil {
		return nil, err
	}
	defer func() {
		if r := recover(); r != nil {
			h, err = nil, fmt.Errorf("malformed histogram (%v)", r)
		}
	}()
	return hdrhistogram.Decode([]byte(encoded))
}

// Bounds on a histogram header. The bench records nanoseconds from 1 ns;
// a lowest value up to 2^32 leaves the bucket arithmetic (up to 2^18
// sub-buckets shifted by log2 of it) far from overflowing int64.
const (
	histogramLowestMax  = 1 << 32
	histogramHighestMax = 1 << 62
	// histogramInflatedMax bounds the decompressed histogram (header and
	// counts): the largest the bench makes is a few hundred kilobytes.
	histogramInflatedMax = 64 << 20
	// histogramCountsMax bounds the counts a header may ask the decoder to
	// allocate (8 bytes each), whatever few bytes follow it: the bench's
	// widest, 1 ns to a week at 3 digits, has 40,960; 5 digits from 1 to
	// 2^62 would be 6 million, 48 MB from a 72-byte histogram.
	histogramCountsMax = 1 << 20
)

// countsLen is the number of counts hdrhistogram-go's New allocates for a
// histogram of lowest, highest and digits (as checked by
// checkHistogramHeader: digits 1..5, lowest >= 1), by its arithmetic.
func countsLen(lowest, highest int64, digits int32) int64 {
	largestSingleUnit := 2 * math.Pow10(int(digits))
	halfMagnitude := max(int32(math.Ceil(math.Log2(largestSingleUnit))), 1) - 1
	unitMagnitude := max(int32(math.Floor(math.Log2(float64(lowest)))), 0)
	subBucketCount := int64(1) << (halfMagnitude + 1)
	untrackable := subBucketCount << unitMagnitude
	buckets := int64(1)
	for untrackable < highest {
		if untrackable > math.MaxInt64/2 {
			buckets++
			break
		}
		untrackable <<= 1
		buckets++
	}
	return (buckets + 1) * (subBucketCount / 2)
}

// checkHistogramHeader reads the V2 compressed encoding's outer header
// (cookie, compressed length) and the inner one (cookie, payload length,
// offset, significant digits, lowest, highest) and checks them.
func checkHistogramHeader(encoded string) error {
	raw, err := base64.StdEncoding.DecodeString(encoded)
	if err != nil {
		return fmt.Errorf("not base64: %w", err)
	}
	if len(raw) < 8 {
		return fmt.Errorf("%d bytes, shorter than the 8-byte header", len(raw))
	}
	if cookie := int32(binary.BigEndian.Uint32(raw[0:4])) &^ 0xf0; cookie != hdrhistogram.V2CompressedEncodingCookieBase {
		return fmt.Errorf("cookie %#x is not a V2 compressed histogram", cookie)
	}
	n := binary.BigEndian.Uint32(raw[4:8])
	if uint64(n) > uint64(len(raw)-8) {
		return fmt.Errorf("header says %d compressed bytes, %d follow", n, len(raw)-8)
	}
	z, err := zlib.NewReader(bytes.NewReader(raw[8 : 8+n]))
	if err != nil {
		return fmt.Errorf("compressed contents: %w", err)
	}
	defer z.Close()
	inflated, err := io.ReadAll(io.LimitReader(z, histogramInflatedMax+1))
	if err != nil {
		return fmt.Errorf("compressed contents: %w", err)
	}
	if len(inflated) > histogramInflatedMax {
		return fmt.Errorf("inflates past %d bytes", histogramInflatedMax)
	}
	const headerBytes = 40
	if len(inflated) < headerBytes {
		return fmt.Errorf("%d bytes inflated, shorter than the %d-byte header", len(inflated), headerBytes)
	}
	digits := int32(binary.BigEndian.Uint32(inflated[12:16]))
	lowest := int64(binary.BigEndian.Uint64(inflated[16:24]))
	highest := int64(binary.BigEndian.Uint64(inflated[24:32]))
	switch {
	case digits < 1 || digits > 5:
		return fmt.Errorf("%d significant digits, want 1 to 5", digits)
	case lowest < 1 || lowest > histogramLowestMax:
		return fmt.Errorf("lowest trackable value %d out of range 1..%d", lowest, int64(histogramLowestMax))
	case highest < 2*lowest || highest > histogramHighestMax:
		return fmt.Errorf("highest trackable value %d out of range %d..%d", highest, 2*lowest, int64(histogramHighestMax))
	}
	if n := countsLen(lowest, highest, digits); n > histogramCountsMax {
		return fmt.Errorf("%d significant digits from %d to %d take %d counts, over the %d allowed", digits, lowest, highest, n, histogramCountsMax)
	}
	return nil
}

// spectrumAxis returns the x positions of the HDR percentile axis: x is
// 1/(1-q) for quantile q, so x=1 is 0%, 10 is 90%, 100 is 99%, and each
// decade of x is one more nine. It reaches the first point past
// countMax, where the quantile's value is the histogram's maximum: at
// countMax itself, 1-1/countMax, it is the sample before the maximum (the
// table's p99.9 of 1,000 samples is the 999th), or at 10^spectrumDecadesMax.
func spectrumAxis(countMax int64) []float64 {
	var xs []float64
	if countMax < 1 {
		return xs
	}
	top := math.Pow(10, spectrumDecadesMax)
	for i := 0; ; i++ {
		x := math.Pow(10, float64(i)/spectrumPointsPerDecade)
		xs = append(xs, x)
		if x > float64(countMax) || x >= top {
			return xs
		}
	}
}

// percentileOf is the percentile (0..100) at axis position x.
func percentileOf(x float64) float64 { return 100 * (1 - 1/x) }

// nearestRankPercentile is the percentile to ask hdrhistogram-go for the
// value at axis position x of a histogram of n samples, as the bench takes
// the table's percentiles (bench.LatencyOf): the nearest rank, ceil(q*n),
// the smallest sample that at least q of them are at or below, and at
// least the first. Asked for q itself, the library rounds q*n to the
// nearest and answers one sample short whenever its fraction is below a
// half: with 160 samples the curve at 99% was the 158th, the table's p99
// the 159th. q is 1-1/x, so ceil(q*n) is n-floor(n/x); n/x is an integer
// only at the decades, where x is exact. The library takes
// int64(p/100*n+0.5) as the count, which for p = 100*rank/n is rank.
func nearestRankPercentile(x float64, n int64) float64 {
	if n < 1 {
		return 0
	}
	rank := n - int64(math.Floor(float64(n)/x))
	rank = min(max(rank, 1), n)
	return 100 * float64(rank) / float64(n)
}

// valuesMS returns the latency in ms at each axis position, the nearest
// rank of its quantile (nearestRankPercentile), NaN past the first
// position beyond the histogram's own count (there it has no samples to say anything).
func (s *spectrum) valuesMS(xs []float64) []float64 {
	out := make([]float64, len(xs))
	pcts := make([]float64, len(xs))
	for i, x := range xs {
		pcts[i] = nearestRankPercentile(x, s.counts)
	}
	vals := s.hist.ValueAtPercentiles(slices.Clone(pcts))
	for i, x := range xs {
		switch {
		case s.counts == 0:
			out[i] = math.NaN()
		case i > 0 && xs[i-1] > float64(s.counts):
			out[i] = math.NaN()
		case x > float64(s.counts):
			// The last sampled position: its quantile is the maximum.
			out[i] = float64(s.hist.Max()) * s.scale
			if s.maxMS > 0 {
				out[i] = s.maxMS
			}
		default:
			out[i] = float64(vals[pcts[i]]) * s.scale
			if s.maxMS > 0 {
				out[i] = math.Min(out[i], s.maxMS)
			}
		}
	}
	return out
}
