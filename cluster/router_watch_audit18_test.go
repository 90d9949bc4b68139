package cluster

import (
	"context"
	"syscall"
	"testing"
	"time"

	"allot/inventory"
)

// TestRouterPoolMovesWhenTheLeaseWatchIsSilent: a KV watch can stop
// bringing updates without an error (seen under load: the router's pool
// was still at a killed primary's address 20 s after the takeover). The
// router then reads the lease itself once its watch has been silent for
// twice the TTL, and moves the pool. Here every update of the watch is
// dropped: without that read the pool never leaves the old address.
func TestRouterPoolMovesWhenTheLeaseWatchIsSilent(t *testing.T) {
	sc := newSharded(t, 1)
	s0 := sc.shards["s0"]
	s0.start("n2")
	r := sc.router("rw18", func(c *RouterConfig) { c.missLeaseUpdate = func() bool { return true } })
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	g := groupKey("rw18")
	if res, err := r.Do(ctx, inventory.Stock(g.Row("w1"), 5, 1), nil); err != nil || res.Code != inventory.CodeOK {
		t.Fatalf("stock: %+v %v", res, err)
	}
	old := s0.nodes[s0.primary()]
	old.kill(syscall.SIGKILL)
	now := s0.waitPrimary(old.id, 30*time.Second)
	// Generous against the bound (2 × TTL of silence, then one read): a
	// much slower machine still gets there; the broken router never does.
	if wait, ok := waitPoolLeaves(r, "s0", old.resp); !ok {
		t.Fatalf("%v after %s took over, with the lease's watch silent, the router's pool is still at %s, the killed primary's address",
			wait, now.id, old.resp)
	}
	if res, err := r.Do(ctx, inventory.Available(g), nil); err != nil || res.Count != 5 {
		t.Fatalf("read after the takeover: %+v %v; want 5", res, err)
	}
}

// waitPoolLeaves waits until the router's pool to shard is gone or at
// another address than addr, and says whether it was within wait: ten
// lease TTLs and half a minute, generous against the bound (a silent
// watch is ended after twice the TTL, then the lease read once).
func waitPoolLeaves(r *Router, shard, addr string) (wait time.Duration, ok bool) {
	wait = 10*r.cfg.LeaseTTL + 30*time.Second
	for deadline := time.Now().Add(wait); ; time.Sleep(20 * time.Millisecond) {
		r.mu.Lock()
		p := r.pools[shard]
		r.mu.Unlock()
		if p == nil || p.Addr() != addr {
			return wait, true
		}
		if time.Now().After(deadline) {
			return wait, false
		}
	}
}
