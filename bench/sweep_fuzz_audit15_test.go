package bench

import (
	"math"
	"slices"
	"strings"
	"testing"
)

// FuzzParseSweep: --sweep's parser had no fuzz target. ParseSweep never
// panics, and what it accepts is a known parameter with 1 to 64 positive,
// finite values (whole for workers and rows), each of whose point labels
// parses back to the same value.
func FuzzParseSweep(f *testing.F) {
	for _, s := range []string{"workers=1,4,16,64", "rows=20,200,2000", "rate=1000,5000.5", "workers=", "=1", "rate=1e308,NaN", "workers=1.5", " workers=1", "rows= 7 ,8"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sw, err := ParseSweep(s)
		if err != nil {
			return
		}
		if !slices.Contains(SweepParams, sw.Param) {
			t.Fatalf("%q: accepted parameter %q", s, sw.Param)
		}
		if len(sw.Values) < 1 || len(sw.Values) > sweepPointsMax {
			t.Fatalf("%q: %d values", s, len(sw.Values))
		}
		for i, v := range sw.Values {
			if !(v > 0) || math.IsInf(v, 0) || (sw.Param != "rate" && v != math.Trunc(v)) {
				t.Fatalf("%q: value %v accepted for %s", s, v, sw.Param)
			}
			p := sw.Point(i)
			back, err := ParseSweep(p.Label)
			if err != nil || back.Param != sw.Param || len(back.Values) != 1 || back.Values[0] != v {
				t.Fatalf("%q: point label %q parses back as %+v, %v", s, p.Label, back, err)
			}
			if !strings.HasPrefix(p.Label, sw.Param+"=") {
				t.Fatalf("%q: label %q", s, p.Label)
			}
		}
	})
}
