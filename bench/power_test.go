package bench

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"allot/inventory"
	"allot/store"
	"allot/store/memory"
)

// A store whose every call fails leaves every op's outcome unknown: the
// conservation check then allows any total and passes on nothing. The run
// must still fail (exit non-zero), and the table must not print a bare
// "check: OK" for it, since that check proved nothing.
func TestPowerEveryOpErroredFailsTheRun(t *testing.T) {
	down := errors.New("connection reset")
	st := &faulty{
		Store: memory.New(),
		capture: func(store.Session, context.Context, inventory.GroupKey, int64, []inventory.Line) (inventory.Result, error) {
			return inventory.Result{}, down
		},
		release: func(store.Session, context.Context, inventory.RowKey, int64) (inventory.Result, error) {
			return inventory.Result{}, down
		},
	}
	w := genWorkload(t, "hot", 500)
	res := runOn(t, RunConfig{Workers: 2, RetryDelay: time.Microsecond, RetryMax: 1}, st, w)
	if res.Errors != int64(len(w.Ops)) {
		t.Fatalf("%d errors, want one per op (%d)", res.Errors, len(w.Ops))
	}
	// The unknown outcomes widen every group's range to all totals: the
	// check has nothing to hold the store to.
	if !res.Check.OK {
		t.Fatalf("the check failed on unknown outcomes, which it must allow: %v", res.Check.Violations)
	}
	if !res.Failed() {
		t.Fatal("a run whose every op failed does not fail: `allot bench` would exit 0")
	}
	var b bytes.Buffer
	if err := WriteTable(&b, []Result{*res}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.Contains(out, "\ncheck: OK\n") || !strings.Contains(out, "FAILED") {
		t.Fatalf("the table reports a run whose every op failed as passing:\n%s", out)
	}
}

// A capture whose reply names the wrong warehouses (the right count, from
// the wrong rows) while the store takes from the right ones: the per-row
// accounting must see that the reply and the rows disagree even though
// every group's total is right.
func TestPowerCaptureReplyNamesOtherRows(t *testing.T) {
	st := &faulty{
		Store: memory.New(),
		capture: func(se store.Session, ctx context.Context, g inventory.GroupKey, n int64, lines []inventory.Line) (inventory.Result, error) {
			res, err := se.Capture(ctx, g, n, lines)
			if err == nil && res.Code == inventory.CodeOK && len(res.Lines) == 1 && res.Lines[0].Warehouse != "w1" {
				// Claim the group's first warehouse instead: still in
				// the group, in order, summing to n.
				res.Lines = []inventory.Line{{Warehouse: "w1", Count: res.Lines[0].Count}}
			}
			return res, err
		},
	}
	res := runOn(t, RunConfig{Workers: 1, RetryDelay: time.Microsecond, RetryMax: 2}, st, genWorkload(t, "hot", 5000))
	if res.Check.OK || !res.Failed() {
		t.Fatalf("replies naming rows the store did not take from passed the check: %+v", res.Check)
	}
	if v := strings.Join(res.Check.Violations, "\n"); !strings.Contains(v, "taken by captures") {
		t.Fatalf("no per-row violation:\n%s", v)
	}
}
