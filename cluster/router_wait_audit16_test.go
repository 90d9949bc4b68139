package cluster

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	"allot/client"
	"allot/inventory"
)

// TestRouterContextEndedBetweenRefusalsIsNotApplied: a call whose every
// attempt was refused (the shard had no primary: a failover) and whose
// context ended while it waited to try again sent nothing that could
// apply. It returned the bare context error, of no outcome class, which
// client.MaybeApplied reads as "maybe applied": a caller of an unkeyed
// capture was told its units may be taken when none were.
func TestRouterContextEndedBetweenRefusalsIsNotApplied(t *testing.T) {
	sc := newSharded(t, 1)
	r := sc.router("wait16", nil)
	var c *shardCluster
	for _, s := range sc.shards {
		c = s
	}
	c.nodes["n1"].kill(syscall.SIGKILL)
	// The lease names nobody (a failover under way): every attempt is
	// refused at once (errNoPrimary), never sent.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	kv, err := c.js.KeyValue(ctx, c.names.lease)
	if err != nil {
		t.Fatal(err)
	}
	if err := kv.Purge(ctx, leaseKey); err != nil {
		t.Fatal(err)
	}
	cancel()
	g := inventory.GroupKey{SKU: "w16", Condition: "new", Source: "own"}
	for i := range 5 {
		ctx, cancel := context.WithTimeout(context.Background(), 180*time.Millisecond)
		_, err := r.Do(ctx, inventory.Capture(g, 1), nil)
		cancel()
		if err == nil {
			t.Fatal("a capture on a shard with no primary succeeded")
		}
		if client.MaybeApplied(err) || errors.Is(err, client.ErrOutcomeUnknown) {
			t.Fatalf("call %d: %v; every attempt was refused, so want a refusal (MaybeApplied false), it was %v",
				i, err, client.MaybeApplied(err))
		}
		if !errors.Is(err, client.ErrUnavailable) && !errors.Is(err, client.ErrNotSent) {
			t.Fatalf("call %d: %v; want ErrUnavailable or ErrNotSent", i, err)
		}
	}
}
