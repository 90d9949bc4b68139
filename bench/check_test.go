package bench

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"allot/inventory"
	"allot/store"
	"allot/store/memory"
)

// Each case wraps the memory store so that it breaks one rule, runs the hot
// preset (every capture contends) and expects the checker to say which.
func TestCheckCatches(t *testing.T) {
	type capFunc = func(se store.Session, ctx context.Context, g inventory.GroupKey, n int64, lines []inventory.Line) (inventory.Result, error)
	type relFunc = func(se store.Session, ctx context.Context, k inventory.RowKey, n int64) (inventory.Result, error)
	var nthCapture int
	every := func(k int) bool { nthCapture++; return nthCapture%k == 0 }
	for _, tc := range []struct {
		name    string
		capture capFunc
		release relFunc
		rows    func([]inventory.Row) []inventory.Row
		want    string
	}{
		{
			name: "capture acknowledged but not applied (oversell)",
			capture: func(se store.Session, ctx context.Context, g inventory.GroupKey, n int64, lines []inventory.Line) (inventory.Result, error) {
				if every(50) {
					return inventory.Result{Code: inventory.CodeOK, Lines: []inventory.Line{{Warehouse: "w1", Count: n}}}, nil
				}
				return se.Capture(ctx, g, n, lines)
			},
			want: "oversold by",
		},
		{
			name: "lines summing to less than n",
			capture: func(se store.Session, ctx context.Context, g inventory.GroupKey, n int64, lines []inventory.Line) (inventory.Result, error) {
				res, err := se.Capture(ctx, g, n, lines)
				if res.Code == inventory.CodeOK && every(20) {
					res.Lines[len(res.Lines)-1].Count--
				}
				return res, err
			},
			want: "summing to",
		},
		{
			name: "lines out of warehouse order",
			capture: func(se store.Session, ctx context.Context, g inventory.GroupKey, n int64, lines []inventory.Line) (inventory.Result, error) {
				res, err := se.Capture(ctx, g, n, lines)
				if res.Code == inventory.CodeOK && len(res.Lines) > 1 {
					slices.Reverse(res.Lines)
				}
				return res, err
			},
			want: "out of ascending warehouse order",
		},
		{
			name: "a warehouse outside the group",
			capture: func(se store.Session, ctx context.Context, g inventory.GroupKey, n int64, lines []inventory.Line) (inventory.Result, error) {
				res, err := se.Capture(ctx, g, n, lines)
				if res.Code == inventory.CodeOK && every(30) {
					res.Lines = append([]inventory.Line(nil), res.Lines...)
					res.Lines[0].Warehouse = "w9"
				}
				return res, err
			},
			want: "not in the group",
		},
		{
			name: "release acknowledged but not applied",
			release: func(se store.Session, ctx context.Context, k inventory.RowKey, n int64) (inventory.Result, error) {
				if every(40) {
					return inventory.Result{Code: inventory.CodeOK}, nil
				}
				return se.Release(ctx, k, n)
			},
			want: "units lost by",
		},
		{
			// Totals agree, rows do not: as if captures took from the
			// wrong warehouse while reporting the right one.
			name: "units in the wrong row of the right group",
			rows: func(rows []inventory.Row) []inventory.Row {
				for i := 1; i < len(rows); i++ {
					a, b := &rows[i-1], &rows[i]
					if a.Key.Group() == b.Key.Group() && a.Count != b.Count {
						a.Count, b.Count = b.Count, a.Count
						break
					}
				}
				return rows
			},
			want: "taken by captures",
		},
		{
			name: "a row below zero",
			rows: func(rows []inventory.Row) []inventory.Row {
				rows[3].Count = -rows[3].Count - 1
				return rows
			},
			want: "below zero",
		},
		{
			name: "a missing row",
			rows: func(rows []inventory.Row) []inventory.Row { return rows[1:] },
			want: "missing",
		},
		{
			name: "a stray row with stock",
			rows: func(rows []inventory.Row) []inventory.Row {
				return append(rows, inventory.Row{Key: inventory.RowKey{SKU: "x", Warehouse: "y", Condition: "z", Source: "q"}, Count: 1})
			},
			want: "never loaded",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nthCapture = 0
			w := genWorkload(t, "hot", 5000)
			st := &faulty{Store: memory.New(), capture: tc.capture, release: tc.release, rows: tc.rows}
			// A lost release makes later captures wait for stock that never
			// comes: retry briefly, then count them as errors.
			res := runOn(t, RunConfig{Workers: 1, RetryDelay: time.Microsecond, RetryMax: 2}, st, w)
			if res.Check.OK || res.Status != StatusCheckFailed || res.Check.ViolationCount == 0 {
				t.Fatalf("check passed: %+v", res.Check)
			}
			found := false
			for _, v := range res.Check.Violations {
				found = found || strings.Contains(v, tc.want)
			}
			if !found {
				t.Fatalf("no violation mentions %q: %q", tc.want, res.Check.Violations)
			}
			if len(res.Check.Violations) > ViolationsListMax || res.Check.ViolationCount < len(res.Check.Violations) {
				t.Fatalf("%d listed of %d counted", len(res.Check.Violations), res.Check.ViolationCount)
			}
		})
	}
}

// TestCheckUnknownOutcomes: an op whose outcome is unknown widens its
// group's allowed range by its n, no more.
func TestCheckUnknownOutcomes(t *testing.T) {
	w := genWorkload(t, "hot", 200)
	p, err := NewPlan(w)
	if err != nil {
		t.Fatal(err)
	}
	st := memory.New()
	ctx := context.Background()
	if err := st.Load(ctx, w.Initial); err != nil {
		t.Fatal(err)
	}
	se, _ := st.Session(ctx)
	o := NewOutcomes(p)
	// Apply every op but do not record the first release as applied.
	first := -1
	for i, op := range w.Ops {
		var res inventory.Result
		if op.Kind == inventory.KindCapture {
			res, _ = se.Capture(ctx, op.Group(), op.N, nil)
		} else {
			res, _ = se.Release(ctx, op.Key, op.N)
		}
		if res.Code != inventory.CodeOK {
			t.Fatalf("op %d: %v", i, res.Code)
		}
		status := OpApplied
		if op.Kind == inventory.KindRelease && first < 0 {
			first, status = i, OpUnknown
		}
		o.Record(i, status, res.Lines)
	}
	rows, _ := st.Rows(ctx)
	if c := Check(o, rows); !c.OK {
		t.Fatalf("unknown release that was applied: %v", c.Violations)
	}
	o.Record(first, OpApplied, nil)
	if c := Check(o, rows); !c.OK {
		t.Fatalf("all applied: %v", c.Violations)
	}
	// Now a release recorded as applied that the store never saw: its
	// row, and so its group, is short by its n and the checker must say
	// so.
	for i := range rows {
		if rows[i].Key == w.Ops[first].Key {
			rows[i].Count -= w.Ops[first].N
		}
	}
	if c := Check(o, rows); c.OK {
		t.Fatal("a lost release passed the check")
	}
	o.Record(first, OpUnknown, nil)
	if c := Check(o, rows); !c.OK {
		t.Fatalf("unknown release that was lost: %v", c.Violations)
	}
}

func TestCheckCapsTheList(t *testing.T) {
	w := genWorkload(t, "seed", 10)
	p, _ := NewPlan(w)
	rows := slices.Clone(w.Initial)
	for i := range rows {
		rows[i].Count = -1
	}
	c := Check(NewOutcomes(p), rows)
	if c.OK || c.ViolationCount < len(rows) || len(c.Violations) != ViolationsListMax {
		t.Fatalf("count %d listed %d", c.ViolationCount, len(c.Violations))
	}
}
