package report

import (
	"math"
	"testing"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

func TestSpectrumAxis(t *testing.T) {
	xs := spectrumAxis(1000)
	if xs[0] != 1 {
		t.Errorf("axis starts at %v, want 1 (0%%)", xs[0])
	}
	if last := xs[len(xs)-1]; last < 1000 || xs[len(xs)-2] >= 1000 {
		t.Errorf("axis ends at %v, want the first point at or past 1000", last)
	}
	if got := len(xs); got != 3*spectrumPointsPerDecade+1 {
		t.Errorf("axis has %d points, want %d for three decades", got, 3*spectrumPointsPerDecade+1)
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
	xs := []float64{2, 10, 100, 1000, 10000, 100000}
	got := s.valuesMS(xs)
	want := []float64{5, 9, 9.9, 9.99, 10, math.NaN()}
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
