package engine

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"allot/inventory"
)

// takeAll takes every frame (a replicated log that never fails).
type takeAll struct{}

func (takeAll) Replicate([]byte) error { return nil }

// TestLeaseLapseSaysSo: a primary whose lease bound passed stops as a
// failed journal does (every request refused, ErrUnavailable with a
// NotPrimaryError), but neither its log line nor the clients' error may
// say the journal failed: an operator who read "engine: journal failed"
// looked for a disk fault on a node whose only fault was a lease renewal
// that did not come back in time.
func TestLeaseLapseSaysSo(t *testing.T) {
	var logged bytes.Buffer
	e, err := Open(Config{Dir: t.TempDir(), Replicated: true,
		Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if err := e.Promote(takeAll{}); err != nil {
		t.Fatal(err)
	}
	e.SetLeaseUntil(time.Now().Add(-time.Millisecond))
	row := inventory.RowKey{SKU: "x", Warehouse: "w1", Condition: "new", Source: "s1"}
	for _, op := range []inventory.Op{inventory.Stock(row, 5, 1), inventory.Available(row.Group())} {
		res, err := e.Do(op, nil)
		var np *NotPrimaryError
		if !errors.Is(err, ErrUnavailable) || !errors.As(err, &np) {
			t.Fatalf("%s past the lease: %+v %v; want refused, not primary", op.Kind, res, err)
		}
		if msg := err.Error(); strings.Contains(msg, "journal") || !strings.Contains(msg, "lease lapsed") {
			t.Fatalf("%s past the lease: the client is told %q; want the lease lapsed named, and no journal", op.Kind, msg)
		}
	}
	if l := logged.String(); strings.Contains(l, "journal failed") || !strings.Contains(l, "lease lapsed") {
		t.Fatalf("the engine logged %q; want the lease lapsed named, and no journal failure", l)
	}
}
