package cluster

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"allot/engine"
	"allot/inventory"
)

// nopReplicator takes every frame.
type nopReplicator struct{}

func (nopReplicator) Replicate([]byte) error { return nil }

// TestPrimaryPastItsLeaseRefusesEverything: the engine's side of the
// bound (engine.SetLeaseUntil): within it a promoted engine answers
// reads, writes and ops that change nothing; from it on, every one of
// them is refused as not applied (a NotPrimaryError), and the engine
// stops (the node steps down).
func TestPrimaryPastItsLeaseRefusesEverything(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "e")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	e, err := engine.Open(engine.Config{Dir: dir, Replicated: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	// A standby ignores the bound: it is not the primary.
	e.SetLeaseUntil(time.Now().Add(-time.Second))
	if _, err := e.Available(groupKey("x")); err != nil {
		t.Fatalf("a standby's read with a past bound: %v", err)
	}
	if err := e.Promote(nopReplicator{}); err != nil {
		t.Fatal(err)
	}
	e.SetLeaseUntil(time.Now().Add(time.Hour))
	row := rowKey("x", "w1")
	if res, err := e.Stock(row, 5, 1); err != nil || res.Code != inventory.CodeOK {
		t.Fatalf("stock within the lease: %+v %v", res, err)
	}
	if res, err := e.Available(row.Group()); err != nil || res.Count != 5 {
		t.Fatalf("read within the lease: %+v %v", res, err)
	}
	e.SetLeaseUntil(time.Now())
	for _, op := range []inventory.Op{inventory.Available(row.Group()), inventory.Release(rowKey("y", "w1"), 1),
		inventory.Confirm("nobody"), inventory.Stock(row, 7, 1)} {
		res, err := e.Do(op, nil)
		var np *engine.NotPrimaryError
		if !errors.Is(err, engine.ErrUnavailable) || !errors.As(err, &np) {
			t.Fatalf("%s past the lease: %+v %v; want refused, not primary", op.Kind, res, err)
		}
	}
	select {
	case <-e.Stopped():
	default:
		t.Fatal("the engine did not stop past its lease")
	}
}
