package bench

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// SweepParams are the parameters a sweep can vary.
var SweepParams = []string{"workers", "rows", "rate"}

// sweepPointsMax bounds the points of one sweep.
const sweepPointsMax = 64

// Sweep is a parsed --sweep: one parameter and the values to run it at.
type Sweep struct {
	Param  string
	Values []float64
}

// ParseSweep parses "param=v1,v2,...", e.g. "workers=1,4,16,64". Workers
// and rows take positive integers, rate positive numbers (ops/s).
func ParseSweep(s string) (Sweep, error) {
	param, list, ok := strings.Cut(s, "=")
	if !ok || list == "" {
		return Sweep{}, fmt.Errorf("bench: sweep %q: want param=v1,v2,... with param one of %s", s, strings.Join(SweepParams, ", "))
	}
	sw := Sweep{Param: param}
	switch param {
	case "workers", "rows", "rate":
	default:
		return Sweep{}, fmt.Errorf("bench: sweep %q: unknown parameter %q (want one of %s)", s, param, strings.Join(SweepParams, ", "))
	}
	for _, f := range strings.Split(list, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || v <= 0 || math.IsInf(v, 0) || math.IsNaN(v) {
			return Sweep{}, fmt.Errorf("bench: sweep %q: %q is not a positive number", s, f)
		}
		if param != "rate" && (v != math.Trunc(v) || v > 1<<30) {
			return Sweep{}, fmt.Errorf("bench: sweep %q: %s takes whole numbers, got %q", s, param, f)
		}
		sw.Values = append(sw.Values, v)
	}
	if len(sw.Values) > sweepPointsMax {
		return Sweep{}, fmt.Errorf("bench: sweep %q: %d points, at most %d", s, len(sw.Values), sweepPointsMax)
	}
	return sw, nil
}

// Point returns the label of point i.
func (s Sweep) Point(i int) *SweepPoint {
	v := s.Values[i]
	return &SweepPoint{Param: s.Param, Value: v, Label: s.Param + "=" + strconv.FormatFloat(v, 'f', -1, 64)}
}
