package rw

import (
	"testing"
	"time"

	"allot/bench"
)

// The histogram answers a quantile with the top of the bucket holding
// it: one op of 9.689 ms read back as p99.9 9.691 ms beside a max of
// 9.689 ms. No percentile is above the maximum.
func TestAudit10bPercentilesNotAboveMax(t *testing.T) {
	m := NewMeter(2)
	m.Start(bench.RunConfig{}, 3)
	m.Worker(0).Record(1500*time.Microsecond, 1)
	m.Worker(1).Record(9689*time.Microsecond, 1)
	m.Worker(1).Record(61_900*time.Microsecond, 1)
	m.Stop()
	var res bench.Result
	if err := m.Fill(&res); err != nil {
		t.Fatal(err)
	}
	l := res.LatencyMS
	if l.Max != 61.9 || l.P50 > l.Max || l.P99 > l.Max || l.P999 > l.Max {
		t.Errorf("latency %+v: a percentile above the max (61.9)", l)
	}
}
