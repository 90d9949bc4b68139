package bench

import (
	"slices"
	"testing"
)

func TestParseSweep(t *testing.T) {
	sw, err := ParseSweep("workers=1,4,16,64")
	if err != nil || sw.Param != "workers" || !slices.Equal(sw.Values, []float64{1, 4, 16, 64}) {
		t.Fatalf("%+v %v", sw, err)
	}
	if p := sw.Point(2); p.Label != "workers=16" || p.Value != 16 {
		t.Fatalf("point: %+v", p)
	}
	if sw, err := ParseSweep("rate=500.5,1000"); err != nil || sw.Point(0).Label != "rate=500.5" {
		t.Fatalf("%+v %v", sw, err)
	}
	for _, bad := range []string{"", "workers", "workers=", "threads=1", "workers=0", "workers=-1", "workers=1.5", "rows=a", "rate=NaN", "rate=Inf"} {
		if _, err := ParseSweep(bad); err == nil {
			t.Errorf("ParseSweep(%q) accepted", bad)
		}
	}
}
