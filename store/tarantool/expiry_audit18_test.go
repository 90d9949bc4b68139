package tarantool

import (
	"context"
	"strings"
	"testing"
	"time"

	gotarantool "github.com/tarantool/go-tarantool/v2"

	"allot/inventory"
	"allot/store"
)

// TestAudit18ExpiryFailureIsReported: the expiry fiber ran each pass in a
// pcall and dropped its error, so a run whose expiry failed (holds past
// their deadlines keeping their units) ended with its check passed. The
// fiber's failures must come back from the checkout's stop, which the
// bench counts as a violation of the run's check.
func TestAudit18ExpiryFailureIsReported(t *testing.T) {
	for _, name := range stores {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			g := inventory.GroupKey{SKU: "audit18-expiry", Condition: "new", Source: "own"}
			st := openStore(t, name, []inventory.Row{{Key: g.Row("w1"), Count: 10, Price: 1}})
			stop, err := st.PrepareCheckout(ctx, store.CheckoutConfig{SweepInterval: 5 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			space := st.engine.space
			// Every pass of the fiber now fails: the index it walks is gone
			// (the next PrepareCheckout creates it again).
			if _, err := st.conn.Do(gotarantool.NewEvalRequest("box.space[...].index.due:drop()").Args([]any{space + "_holds"})).Get(); err != nil {
				t.Fatal(err)
			}
			failed := "local c = rawget(_G, 'allot_checkout'); return c ~= nil and c.failed ~= nil and c.failed[...] ~= nil"
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				r, err := st.conn.Do(gotarantool.NewEvalRequest(failed).Args([]any{space})).Get()
				if err != nil {
					t.Fatal(err)
				}
				if len(r) == 1 && r[0] == true {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("30 s with the index it walks dropped, the expiry fiber of %s has recorded no failure", space)
				}
			}
			err = stop()
			if err == nil || !strings.Contains(err.Error(), "expiry of "+space+" failed") {
				t.Fatalf("stop after failed expiry passes: %v; want the failures reported", err)
			}
		})
	}
}
