package cluster

import (
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"allot/inventory"
	"allot/server/servertest"
	"allot/services"
)

// holdLeaseWatch stops r's lease watches (followLease) for the rest of
// the test, and starts no new ones: the moment between a takeover and the
// watch's update, which on a loaded machine lasts as long as the machine
// lets it, held open for as long as the test needs it.
func holdLeaseWatch(r *Router) {
	r.mu.Lock()
	r.stopWatch()
	r.mu.Unlock()
	r.watchers.Wait()
}

// TestRouterReadAfterWriteBeforeTheWatchUpdate: the router's last write
// was acknowledged by the primary at address A; that primary was killed,
// a standby took over, and a node started again at A from an empty data
// directory, a standby still catching up. Until the lease watch's update
// arrives the router's pool still names A: it dialled A again (its
// connections had closed) and read from the standby, and the read missed
// the router's own acknowledged write. The watch is held back here, so the
// read falls in that window whatever the machine's speed; a router must
// read only from a node that says it is the primary (HELLO's role).
func TestRouterReadAfterWriteBeforeTheWatchUpdate(t *testing.T) {
	sc := newSharded(t, 1)
	s0 := sc.shards["s0"]
	s0.start("n2")
	r := sc.router("rw17", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// A log of a few hundred frames, which the restarted node follows
	// slowly (slowNATS): it cannot have the write below when the router
	// reads.
	for i := range 300 {
		if res, err := r.Do(ctx, inventory.Stock(rowKey(fmt.Sprintf("fill%d", i), "w1"), 1, 1), nil); err != nil || res.Code != inventory.CodeOK {
			t.Fatalf("stock %d: %+v %v", i, res, err)
		}
	}
	g := groupKey("rw17")
	if res, err := r.Do(ctx, inventory.Stock(g.Row("w1"), 5, 1), nil); err != nil || res.Code != inventory.CodeOK {
		t.Fatalf("stock: %+v %v", res, err)
	}
	if res, err := r.Do(ctx, inventory.Available(g), nil); err != nil || res.Count != 5 {
		t.Fatalf("available: %+v %v", res, err)
	}
	old := s0.nodes[s0.primary()]
	r.mu.Lock()
	at := r.pools["s0"].Addr()
	r.mu.Unlock()
	if at != old.resp {
		t.Fatalf("the router's pool is at %s, the primary %s at %s", at, old.id, old.resp)
	}
	holdLeaseWatch(r)
	old.kill(syscall.SIGKILL)
	now := s0.waitPrimary(old.id, 30*time.Second)
	if err := os.RemoveAll(old.data); err != nil {
		t.Fatal(err)
	}
	var urls []string
	for _, n := range services.NATSNodes {
		addr, err := services.Addr(s0.nats, n)
		if err != nil {
			t.Fatal(err)
		}
		urls = append(urls, "nats://"+servertest.StartFilterProxy(t, addr, slowNATS(10*time.Millisecond)).Addr())
	}
	s0.start(old.id, "--cluster", strings.Join(urls, ",")) // a standby at the old address, from empty, catching up slowly
	res, err := r.Do(ctx, inventory.Available(g), nil)
	r.mu.Lock()
	addr := "none"
	if p := r.pools["s0"]; p != nil {
		addr = p.Addr()
	}
	r.mu.Unlock()
	// The window was reached: the standby at the old address did not yet
	// have the write when the router read (a standby's state only grows,
	// so it did not have it before either).
	sres, serr := old.cli.Available(ctx, g)
	if serr != nil {
		t.Fatalf("the standby's own read: %v", serr)
	}
	if sres.Count == 5 {
		t.Fatalf("the standby %s caught up before the test read through the router: the window was not reached", old.id)
	}
	if err != nil || res.Count != 5 {
		t.Fatalf("the router's read after its own acknowledged stock: %+v %v; want 5 (its pool is at %s; %s, the primary, at %s; %s, a standby at %d, at %s)",
			res, err, addr, now.id, now.resp, old.id, sres.Count, old.resp)
	}
	// The router's write and then its read, the watch still held: both
	// at the primary.
	if res, err := r.Do(ctx, inventory.Capture(g, 2), nil); err != nil || res.Code != inventory.CodeOK {
		t.Fatalf("capture: %+v %v", res, err)
	}
	if res, err := r.Do(ctx, inventory.Available(g), nil); err != nil || res.Count != 3 {
		t.Fatalf("the router's read after its own acknowledged capture: %+v %v; want 3", res, err)
	}
	if sres, err := old.cli.Available(ctx, g); err != nil || sres.Count == 3 {
		t.Logf("the standby caught up meanwhile (%+v %v): the second read proves less", sres, err)
	}
}
