package embedded

import (
	"context"
	"strings"
	"testing"
	"time"

	"allot/inventory"
	"allot/store"
)

// TestLoadOverLiveHoldsIsRefused: Load promises to replace whatever the
// store holds, but on a reused data directory (--data) the holds an
// earlier run left held (a checkout run interrupted) stayed live: their
// units came back to the freshly loaded rows when they expired, mid-run,
// so the next run's rows grew from nowhere (Load(5) read back 8).
func TestLoadOverLiveHoldsIsRefused(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	k := inventory.RowKey{SKU: "s", Warehouse: "w", Condition: "c", Source: "o"}
	rows := []inventory.Row{{Key: k, Count: 5, Price: 1}}
	st, err := store.Open(ctx, "embedded", store.Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Load(ctx, rows); err != nil {
		t.Fatal(err)
	}
	res, err := st.(*Store).Engine().Hold("left-behind", time.Hour, []inventory.Demand{{Group: k.Group(), N: 3}})
	if err != nil || res.Code != inventory.CodeOK {
		t.Fatalf("hold: %v %v", res.Code, err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	st, err = store.Open(ctx, "embedded", store.Config{DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	err = st.Load(ctx, rows)
	if live := st.(*Store).Engine().Stats().State.HoldsActive; err == nil && live != 0 {
		t.Fatalf("Load succeeded with %d hold(s) of an earlier run still live: their units return to the loaded rows when they expire", live)
	}
	if err == nil || !strings.Contains(err.Error(), "hold") {
		t.Fatalf("Load over a live hold: err %v, want one naming the holds", err)
	}
}
