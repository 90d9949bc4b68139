package rowrecords

import (
	"context"
	"strings"
	"testing"

	"allot/engine"
	"allot/inventory"
	"allot/store"
)

// engineOps runs ops on a real engine, one at a time.
type engineOps struct{ e *engine.Engine }

func (o engineOps) Do(_ context.Context, op inventory.Op) (inventory.Result, error) {
	return o.e.Do(op, nil)
}

func (o engineOps) Pipeline(ctx context.Context, ops []inventory.Op, results []inventory.Result) error {
	for i := range ops {
		r, err := o.Do(ctx, ops[i])
		if err != nil {
			return err
		}
		results[i] = r
	}
	return nil
}

func (o engineOps) Close() error { return nil }

// TestOutcomeErrorsAudit17: a modify of a record that does not exist is an
// error (store.RWSession), and says so: it named the outcome code followed
// by an empty detail, so the message ended in a space ("... not_found ").
func TestOutcomeErrorsAudit17(t *testing.T) {
	e, err := engine.Open(engine.Config{Dir: t.TempDir(), Durability: engine.DurabilityNone})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ops := engineOps{e}
	sp := NewSpace("test", ops, func(context.Context) (Ops, error) { return ops, nil })
	ctx := context.Background()
	se, err := sp.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := sp.Load(ctx, []store.RWRecord{{Key: "k1", Value: 3}}); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []store.RWModify{store.RWLocked, store.RWUnlocked} {
		_, err := se.Modify(ctx, []string{"missing"}, 1, mode)
		if err == nil {
			t.Fatalf("%v modify of a missing record: no error", mode)
		}
		if msg := err.Error(); strings.HasSuffix(msg, " ") || !strings.Contains(msg, "missing") || !strings.Contains(msg, "not_found") {
			t.Errorf("%v modify of a missing record: %q, want it to name the key and not_found, with no trailing space", mode, msg)
		}
		if _, err := se.Modify(ctx, []string{"k1"}, 1, mode); err != nil {
			t.Fatalf("%v modify of k1: %v", mode, err)
		}
	}
	// An invalid value names the rule broken.
	err = se.Write(ctx, []store.RWRecord{{Key: "k2", Value: -1}})
	if err == nil || strings.HasSuffix(err.Error(), " ") || !strings.Contains(err.Error(), "k2") || !strings.Contains(err.Error(), "count") {
		t.Fatalf("writing a negative value: %v", err)
	}
	recs, err := sp.Records(ctx)
	if err != nil || len(recs) != 1 || recs[0] != (store.RWRecord{Key: "k1", Value: 5}) {
		t.Fatalf("records %v %v, want k1 = 5", recs, err)
	}
}
