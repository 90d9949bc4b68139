package memory

import (
	"context"
	"testing"

	"allot/inventory"
	"allot/store"
	"allot/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return New() })
}

func TestRegistered(t *testing.T) {
	st, err := store.Open(context.Background(), "memory", store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, ok := st.(*Store); !ok {
		t.Fatalf("store.Open(memory) returned %T", st)
	}
}

func TestLoadInvalidRowChangesNothing(t *testing.T) {
	ctx := context.Background()
	s := New()
	good := []inventory.Row{{Key: inventory.RowKey{SKU: "s", Warehouse: "w", Condition: "c", Source: "o"}, Count: 2, Price: 1}}
	if err := s.Load(ctx, good); err != nil {
		t.Fatal(err)
	}
	bad := append(good, inventory.Row{Key: inventory.RowKey{SKU: "", Warehouse: "w", Condition: "c", Source: "o"}, Count: 1})
	if err := s.Load(ctx, bad); err == nil {
		t.Fatal("Load accepted a row with an empty sku")
	}
	rows, _ := s.Rows(ctx)
	if len(rows) != 1 || rows[0] != good[0] {
		t.Fatalf("after a refused Load: %v, want %v", rows, good)
	}
}

// BenchmarkCapture measures one capture and one release through a session:
// the floor of the bench's store calls. It must not allocate.
func BenchmarkCaptureRelease(b *testing.B) {
	ctx := context.Background()
	s := New()
	k := inventory.RowKey{SKU: "sku-000001", Warehouse: "w1", Condition: "new", Source: "supplier"}
	if err := s.Load(ctx, []inventory.Row{{Key: k, Count: 10, Price: 1}}); err != nil {
		b.Fatal(err)
	}
	se, _ := s.Session(ctx)
	lines := make([]inventory.Line, 0, 4)
	b.ReportAllocs()
	for b.Loop() {
		if res, _ := se.Capture(ctx, k.Group(), 1, lines); res.Code != inventory.CodeOK {
			b.Fatal(res.Code)
		}
		if res, _ := se.Release(ctx, k, 1); res.Code != inventory.CodeOK {
			b.Fatal(res.Code)
		}
	}
}
