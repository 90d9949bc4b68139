package report

import (
	"bytes"
	"compress/zlib"
	"encoding/base64"
	"encoding/binary"
	"io"
	"math"
	"testing"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

func TestSpectrumAxis(t *testing.T) {
	xs := spectrumAxis(1000)
	if xs[0] != 1 {
		t.Errorf("axis starts at %v, want 1 (0%%)", xs[0])
	}
	// At x=1000, 99.9%, the nearest rank of 1000 samples is the 999th; the
	// maximum is one point further.
	if last := xs[len(xs)-1]; last <= 1000 || xs[len(xs)-2] > 1000 {
		t.Errorf("axis ends at %v, want the first point past 1000", last)
	}
	if got := len(xs); got != 3*spectrumPointsPerDecade+2 {
		t.Errorf("axis has %d points, want %d for three decades and one past", got, 3*spectrumPointsPerDecade+2)
	}
	if len(spectrumAxis(0)) != 0 {
		t.Error("an empty histogram has no axis")
	}
	if last := spectrumAxis(1 << 40); last[len(last)-1] > math.Pow(10, spectrumDecadesMax)*1.0001 {
		t.Errorf("axis runs past %d nines", spectrumDecadesMax)
	}
	for _, tt := range []struct{ x, want float64 }{{1, 0}, {10, 90}, {100, 99}, {1000, 99.9}} {
		if got := percentileOf(tt.x); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("percentileOf(%v) = %v, want %v", tt.x, got, tt.want)
		}
	}
}

// TestSpectrumValues records 1..10000 µs once each, so the value at
// percentile p is p% of 10 ms, and checks the decoded spectrum says so.
func TestSpectrumValues(t *testing.T) {
	h := hdrhistogram.New(1, 1_000_000, 3)
	for v := int64(1); v <= 10000; v++ {
		if err := h.RecordValue(v); err != nil {
			t.Fatal(err)
		}
	}
	enc, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		t.Fatal(err)
	}
	s, err := decodeSpectrum(string(enc), "us")
	if err != nil {
		t.Fatal(err)
	}
	xs := []float64{2, 10, 100, 1000, 10000, 100000, 1000000}
	got := s.valuesMS(xs)
	want := []float64{5, 9, 9.9, 9.99, 9.999, 10, math.NaN()}
	for i := range xs {
		switch {
		case math.IsNaN(want[i]):
			if !math.IsNaN(got[i]) {
				t.Errorf("at x=%v: %v, want no value past the histogram's count", xs[i], got[i])
			}
		case math.Abs(got[i]-want[i]) > want[i]*0.002: // 3 significant digits
			t.Errorf("at %v%%: %v ms, want %v ms", percentileOf(xs[i]), got[i], want[i])
		}
	}
	if _, err := decodeSpectrum(string(enc), "parsecs"); err == nil {
		t.Error("an unknown unit was accepted")
	}
	if _, err := decodeSpectrum("not a histogram", "us"); err == nil {
		t.Error("garbage decoded as a histogram")
	}
}

func TestUnitToMS(t *testing.T) {
	for unit, want := range map[string]float64{"ns": 1e-6, "us": 1e-3, "µs": 1e-3, "ms": 1, "s": 1000} {
		if got, err := unitToMS(unit); err != nil || got != want {
			t.Errorf("unitToMS(%q) = %v, %v; want %v", unit, got, err, want)
		}
	}
}

// reencode inflates an encoded histogram, lets patch change the inner
// header or counts, and encodes it again.
func reencode(t *testing.T, encoded string, patch func(inflated []byte)) string {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(encoded)
	if err != nil {
		t.Fatal(err)
	}
	z, err := zlib.NewReader(bytes.NewReader(raw[8:]))
	if err != nil {
		t.Fatal(err)
	}
	inflated, err := io.ReadAll(z)
	if err != nil {
		t.Fatal(err)
	}
	patch(inflated)
	var buf bytes.Buffer
	zw := zlib.NewWriter(&buf)
	zw.Write(inflated)
	zw.Close()
	out := make([]byte, 8, 8+buf.Len())
	copy(out, raw[:4])
	binary.BigEndian.PutUint32(out[4:8], uint32(buf.Len()))
	return base64.StdEncoding.EncodeToString(append(out, buf.Bytes()...))
}

// TestMalformedHistograms: headers the decoder library would loop on or
// panic over come back as errors.
func TestMalformedHistograms(t *testing.T) {
	h := hdrhistogram.New(1, 1_000_000, 3)
	h.RecordValue(42)
	enc, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		t.Fatal(err)
	}
	good := string(enc)
	if _, err := decodeSpectrum(good, "ns"); err != nil {
		t.Fatalf("the unpatched histogram does not decode: %v", err)
	}
	tests := map[string]string{
		"short":           "AAAA",
		"not base64":      "%%%",
		"wrong cookie":    base64.StdEncoding.EncodeToString([]byte{0, 0, 0, 1, 0, 0, 0, 0}),
		"length too long": base64.StdEncoding.EncodeToString([]byte{0x1c, 0x84, 0x93, 0x14, 0, 0, 1, 0}),
		// With lowest 2^62 the library's bucket sizing shifts to zero and
		// never ends.
		"huge lowest": reencode(t, good, func(b []byte) {
			binary.BigEndian.PutUint64(b[16:24], 1<<62)
			binary.BigEndian.PutUint64(b[24:32], 1<<62+1)
		}),
		"digits": reencode(t, good, func(b []byte) { binary.BigEndian.PutUint32(b[12:16], 9) }),
		"highest below lowest": reencode(t, good, func(b []byte) {
			binary.BigEndian.PutUint64(b[24:32], 1)
		}),
	}
	for name, enc := range tests {
		t.Run(name, func(t *testing.T) {
			if _, err := decodeSpectrum(enc, "ns"); err == nil {
				t.Error("decoded without error")
			}
		})
	}
}
