package cluster

import (
	"context"
	"errors"
	"testing"
	"time"

	"allot/client"
	"allot/inventory"
)

// TestRouterLeaseReadFailureIsNotSent: when the Router cannot read a
// shard's lease (its NATS connection is gone), it never sent the request:
// the error must say so (client.ErrNotSent, MaybeApplied false), so that a
// caller of an unkeyed capture knows nothing was taken. It was an error of
// no class, read as "maybe applied".
func TestRouterLeaseReadFailureIsNotSent(t *testing.T) {
	sc := newSharded(t, 1)
	r := sc.router("lease15", func(c *RouterConfig) { c.RetryFor = 300 * time.Millisecond })
	r.nc.Close() // no pool yet: the first call reads the lease
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	g := inventory.GroupKey{SKU: "l15", Condition: "new", Source: "own"}
	_, err := r.Do(ctx, inventory.Capture(g, 1), nil)
	if err == nil {
		t.Fatal("a capture through a Router without NATS succeeded")
	}
	if client.MaybeApplied(err) || !errors.Is(err, client.ErrNotSent) {
		t.Fatalf("capture with the lease unreadable: %v; want ErrNotSent (never sent), MaybeApplied false (it was %v)", err, client.MaybeApplied(err))
	}
}
