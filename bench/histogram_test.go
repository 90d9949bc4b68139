package bench

import (
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

func TestLatencyMergeAndEncode(t *testing.T) {
	a, b := newLatencyRecorder(), newLatencyRecorder()
	for i := range 1000 {
		a.record(time.Duration(i+1) * time.Microsecond) // 1 µs .. 1 ms
	}
	b.record(2 * time.Hour) // beyond the histogram: clamped, max kept exact
	b.record(0)             // below it: clamped to 1 ns
	m := merge([]*latencyRecorder{&a, &b})
	l := m.latency()
	if l.P50 < 0.49 || l.P50 > 0.51 || l.Max != float64(2*time.Hour)/1e6 {
		t.Fatalf("latency %+v", l)
	}
	enc, err := m.encode()
	if err != nil {
		t.Fatal(err)
	}
	h, err := hdrhistogram.Decode([]byte(enc))
	if err != nil || h.TotalCount() != 1002 || h.ValueAtQuantile(50) != m.h.ValueAtQuantile(50) {
		t.Fatalf("decoded: %v, %d samples", err, h.TotalCount())
	}
	if (merged{h: newHistogram()}).latency() != (Latency{}) {
		t.Fatal("an empty histogram has percentiles")
	}
}
