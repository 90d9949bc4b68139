package redis

import (
	"context"
	"testing"
	"time"

	"allot/inventory"
	"allot/store"
)

// A cancelled (or expired) hold gives its units back with HINCRBY, whose
// integer reply reaches Lua as a double. Near 2^62 doubles are 512 apart,
// so a count that lands anywhere in 2^62-256 .. 2^62-2 reads as 2^62, and
// finish.lua's cap set it to 2^62-1: units that no one released. A count
// below the bound must come back exactly; only one past it is capped.
func TestAudit17GiveBackNearCountMaxIsExact(t *testing.T) {
	ctx := context.Background()
	g := inventory.GroupKey{SKU: "audit17-cap", Condition: "new", Source: "own"}
	for _, tc := range []struct {
		name    string
		initial int64
		release int64 // released while the hold is held
		want    int64 // after the cancel
	}{
		{"back to 2^62-2", inventory.CountMax - 1, 0, inventory.CountMax - 1},
		{"back to 2^62-200", inventory.CountMax - 199, 0, inventory.CountMax - 199},
		{"back to 2^62-1", inventory.CountMax, 0, inventory.CountMax},
		{"past 2^62-1 is capped", inventory.CountMax, 3, inventory.CountMax},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := open(t)
			defer st.Close()
			if err := st.Load(ctx, []inventory.Row{{Key: g.Row("w1"), Count: tc.initial, Price: 1}}); err != nil {
				t.Fatal(err)
			}
			stop, err := st.(store.CheckoutPreparer).PrepareCheckout(ctx, store.CheckoutConfig{})
			if err != nil {
				t.Fatal(err)
			}
			defer stop()
			se, err := st.Session(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer se.Close()
			co := se.(store.Checkouter)
			var res store.HoldResult
			if err := co.Hold(ctx, "audit17-h", time.Hour, []store.CartLine{{Group: g, N: 3}}, &res); err != nil || res.Code != store.CheckoutOK {
				t.Fatalf("hold 3 = %v %v", res.Code, err)
			}
			if tc.release > 0 {
				if r, err := se.Release(ctx, g.Row("w1"), tc.release); err != nil || r.Code != inventory.CodeOK {
					t.Fatalf("release %d = %+v %v", tc.release, r, err)
				}
			}
			if c, err := co.Cancel(ctx, "audit17-h"); err != nil || c != store.CheckoutOK {
				t.Fatalf("cancel = %v %v", c, err)
			}
			if got := rowMap(t, st)[g.Row("w1")].Count; got != tc.want {
				t.Errorf("after the cancel the row holds %d, want %d (%+d)", got, tc.want, got-tc.want)
			}
		})
	}
}
