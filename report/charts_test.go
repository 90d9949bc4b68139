package report

import (
	"math"
	"testing"

	"allot/bench"
)

func TestPerSecond(t *testing.T) {
	tests := []struct {
		name    string
		counts  []int64
		seconds float64
		want    []float64
	}{
		{"short last second dropped", []int64{100, 100, 100, 100, 3}, 4.01, []float64{100, 100, 100, 100}},
		{"long last second as a rate", []int64{100, 100, 60}, 2.6, []float64{100, 100, 100}},
		{"only bucket as a rate", []int64{50}, 0.25, []float64{200}},
		{"whole seconds", []int64{10, 20}, 2, []float64{10, 20}},
		{"seconds disagree", []int64{10, 20}, 0, []float64{10, 20}},
		{"empty", nil, 1, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := perSecond(&bench.Result{Throughput: tt.counts, Seconds: tt.seconds})
			if len(got) != len(tt.want) {
				t.Fatalf("perSecond = %v, want %v", got, tt.want)
			}
			for i := range got {
				if math.Abs(got[i]-tt.want[i]) > 1e-9 {
					t.Fatalf("perSecond = %v, want %v", got, tt.want)
				}
			}
		})
	}
}
