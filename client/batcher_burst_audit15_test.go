package client

import (
	"context"
	"sync"
	"testing"
	"time"

	"allot/inventory"
)

// TestAudit15BatcherBurstBehindARefusal: calls that go out at once on a
// server refusing connections (max clients) were read by nobody, so none
// may be reported maybe applied. One pipeline was: the writer, failing to
// write the next pipeline into the connection the server had closed,
// closed the socket while the reader had not yet read the refusal to the
// pipeline before it (it then read "use of closed network connection",
// an unknown outcome). Before the fix about 1 run in 30; run it with
// -count=100 to see it.
func TestAudit15BatcherBurstBehindARefusal(t *testing.T) {
	g := inventory.GroupKey{SKU: "s", Condition: "new", Source: "own"}
	addr, _ := fullServer(t, g)
	c, err := New(Config{Addr: addr})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	b := NewBatcher(c, 5*time.Second)
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	capture := inventory.Capture(g, 1)
	if _, err := b.Do(ctx, capture, nil); !refusal(err, &capture) {
		t.Fatalf("a call on a full server: %v; want the server's refusal", err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = b.Do(ctx, capture, nil)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if MaybeApplied(err) {
			t.Fatalf("call %d: %v (maybe applied)", i, err)
		}
	}
}
