package bench

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// A stage whose p99 lies above the histogram's last bound (~1 s for the
// server's stages) was printed as that bound, "1048.5760", as if it were
// measured: a sync stalled for seconds read as one of a second. It is
// printed ">1048.5760", and the JSON says it is a floor; figures within
// the range are printed as they were.
func TestAudit13BreakdownMarksQuantilesAboveTheRange(t *testing.T) {
	bounds := []float64{0.001, 0.002, 1.048576}
	// 100 samples: 98 at most 1 ms, 2 above the last bound (3 s each).
	after := Stages{
		{Stage: "sync", Bounds: bounds, Counts: []uint64{98, 98, 98}, Count: 100, Sum: 0.098*0.5 + 6},
		{Stage: "reply", Bounds: bounds, Counts: []uint64{100, 100, 100}, Count: 100, Sum: 0.05},
	}
	b := NewBreakdown(nil, after)
	var out bytes.Buffer
	if err := WriteBreakdowns(&out, []Result{{Store: "allot", Durability: "fsync", Workers: 4, Breakdown: b}}); err != nil {
		t.Fatal(err)
	}
	var syncLine, replyLine string
	for _, l := range strings.Split(out.String(), "\n") {
		switch f := strings.Fields(l); {
		case len(f) > 0 && f[0] == "sync":
			syncLine = l
		case len(f) > 0 && f[0] == "reply":
			replyLine = l
		}
	}
	if f := strings.Fields(syncLine); len(f) != 5 || f[4] != ">1048.5760" || strings.HasPrefix(f[3], ">") {
		t.Fatalf("sync line %q: want p99 \">1048.5760\" (above the range) and p50 within it\n%s", syncLine, out.String())
	}
	if strings.Contains(replyLine, ">") {
		t.Fatalf("reply line %q: a p99 within the range is marked", replyLine)
	}
	j, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(j), `"p99_above_range":true`); n != 1 || strings.Contains(string(j), `"p50_above_range"`) {
		t.Fatalf("breakdown JSON %s: want p99_above_range on the sync stage alone", j)
	}
}
