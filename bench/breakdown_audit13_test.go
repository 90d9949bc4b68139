package bench

import (
	"bytes"
	"encoding/json"
	"math"
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

// TestAudit13BreakdownAcrossARestartOrNewBuckets: NewBreakdown subtracted
// the server's counts before the run from those after it in unsigned
// integers. A server restarted during the run counts from zero again:
// the subtraction wrapped, and the table printed a count near 2^64 and a
// mean of nonsense. A stage whose buckets changed (another build) was
// not subtracted at all, and its figures silently covered the server's
// whole life. Each is detected now: the stage has a note saying what
// happened and no figures, in the JSON and in the table; a stage of the
// same server and buckets beside them keeps its figures.
func TestAudit13BreakdownAcrossARestartOrNewBuckets(t *testing.T) {
	bounds := []float64{0.001, 0.002, 1.048576}
	before := Stages{
		{Stage: "apply", Bounds: bounds, Counts: []uint64{900, 990, 1000}, Count: 1000, Sum: 0.5},
		{Stage: "sync", Bounds: bounds, Counts: []uint64{10, 20, 30}, Count: 30, Sum: 0.1},
		{Stage: "reply", Bounds: bounds, Counts: []uint64{100, 100, 100}, Count: 100, Sum: 0.05},
	}
	after := Stages{
		// Restarted: fewer samples than before the run.
		{Stage: "apply", Bounds: bounds, Counts: []uint64{40, 50, 50}, Count: 50, Sum: 0.02},
		// Other buckets: the same stage measured on another scale.
		{Stage: "sync", Bounds: []float64{0.0005, 0.001, 0.002, 1.048576}, Counts: []uint64{5, 15, 25, 40}, Count: 40, Sum: 0.15},
		{Stage: "reply", Bounds: bounds, Counts: []uint64{150, 200, 200}, Count: 200, Sum: 0.15},
	}
	b := NewBreakdown(before, after)
	byStage := map[string]StageTime{}
	for _, s := range b.Stages {
		byStage[s.Stage] = s
	}
	if s := byStage["apply"]; s.Note == "" || !strings.Contains(s.Note, "went down") || s.Count != 0 || s.MeanMS != 0 || s.P99MS != 0 {
		t.Errorf("apply, counts lower after the run than before: %+v, want a note that they went down and no figures", s)
	}
	if s := byStage["sync"]; s.Note == "" || !strings.Contains(s.Note, "buckets") || s.Count != 0 || s.MeanMS != 0 || s.P99MS != 0 {
		t.Errorf("sync, other buckets after the run: %+v, want a note on the buckets and no figures", s)
	}
	if s := byStage["reply"]; s.Note != "" || s.Count != 100 || math.Abs(s.MeanMS-1) > 1e-9 {
		t.Errorf("reply, same server and buckets: %+v, want 100 samples of mean 1 ms and no note", s)
	}
	j, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(j), `"note":`); n != 2 {
		t.Errorf("breakdown JSON %s: want a note on two stages", j)
	}
	var out bytes.Buffer
	if err := WriteBreakdowns(&out, []Result{{Store: "allot", Durability: "fsync", Workers: 4, Breakdown: b}}); err != nil {
		t.Fatal(err)
	}
	table := out.String()
	if strings.Contains(table, "18446744") {
		t.Errorf("the table prints a wrapped count:\n%s", table)
	}
	for _, l := range strings.Split(table, "\n") {
		f := strings.Fields(l)
		if len(f) == 0 || (f[0] != "apply" && f[0] != "sync") {
			continue
		}
		if strings.ContainsAny(l, "0123456789") {
			t.Errorf("the %s row prints figures: %q\n%s", f[0], l, table)
		}
	}
	for _, note := range []string{byStage["apply"].Note, byStage["sync"].Note} {
		if note == "" || !strings.Contains(table, note) {
			t.Errorf("the table does not say %q:\n%s", note, table)
		}
	}
}
