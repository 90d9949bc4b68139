package cluster

import (
	"context"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"allot/client"
	"allot/inventory"
)

// A Router given no coordinator name was named <hostname>-<pid>, so every
// Router of a process had the same name. Recover takes an undecided
// (holding) record of its own name for its own, and leaves it only when
// it is running it itself: one Router's Recover (its background pass,
// RouterConfig.RecoverEvery) cancelled the order another Router of the
// same process had in flight, between its holds and its decision. A
// Router given no name now gets one of its own (coordinatorDefault).

// TestRoutersWithoutANameKeepApart: two Routers made in one process from
// one config that names no coordinator (validated once, as a caller may);
// while the first has a cross-shard order in flight, the second's Recover
// leaves it to its coordinator, and the order is confirmed on every shard.
func TestRoutersWithoutANameKeepApart(t *testing.T) {
	sc, setup, _, a, b := crossShards(t, "apart", 10, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := RouterConfig{URLs: sc.urls, Client: client.Config{PoolSize: 4, DialTimeout: time.Second}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	var routers [2]*Router
	for i := range routers {
		r, err := NewRouter(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(r.Close)
		routers[i] = r
	}
	first, second := routers[0], routers[1]
	if first.cfg.Coordinator == second.cfg.Coordinator {
		t.Errorf("two Routers of one process given no name are both coordinator %q", first.cfg.Coordinator)
	}

	// The first router's order stops after its record is made (holding),
	// until the second's Recover has run.
	reached, release := make(chan struct{}), make(chan struct{})
	var releaseOnce sync.Once
	unblock := func() { releaseOnce.Do(func() { close(release) }) }
	defer unblock()
	first.crash = func(step string, part int) bool {
		if step == "begun" {
			close(reached)
			<-release
		}
		return false
	}
	type reply struct {
		res inventory.Result
		err error
	}
	done := make(chan reply, 1)
	lines := []inventory.Demand{{Group: a, N: 2}, {Group: b, N: 3}}
	go func() {
		res, err := first.Order(ctx, "k-apart", lines)
		done <- reply{res, err}
	}()
	select {
	case <-reached:
	case <-ctx.Done():
		t.Fatal("the first router's order never reached its holds")
	}
	hold := first.orderHold("k-apart")
	st, err := second.Recover(ctx)
	if err != nil {
		t.Fatalf("the second router's Recover: %v", err)
	}
	rec, _, found, err := setup.load(ctx, hold)
	unblock()
	if err != nil || !found {
		t.Fatalf("the order's record: %v %v", found, err)
	}
	if st.Cancelled+st.Confirmed+st.Partial != 0 || rec.State != stHolding {
		t.Fatalf("the second router's Recover finished the first's order in flight: %+v, its record %s (coordinator %q; the second is %q); want it skipped, holding",
			st, rec.State, rec.Coord, second.cfg.Coordinator)
	}
	got := <-done
	if got.err != nil || got.res.Code != inventory.CodeOK {
		t.Fatalf("the first router's order: %+v %v; want OK", got.res, got.err)
	}
	for _, g := range []inventory.GroupKey{a, b} {
		if get, err := setup.call(ctx, setup.m.Of(g), inventory.HoldGet(hold)); err != nil || get.State != inventory.HoldConfirmed {
			t.Fatalf("the order's part on %s: %+v %v; want confirmed", setup.m.Of(g), get, err)
		}
	}
	if n := available(t, ctx, setup, a); n != 20-2 {
		t.Fatalf("group a at %d, want 18", n)
	}
}

// TestCoordinatorNames: a name given is kept as it is (a router restarted
// under it recovers its own records at once); a default one names the
// host and the process, fits in what an unkeyed order's hold id keeps of
// it, is a valid id, and differs from one router to the next.
func TestCoordinatorNames(t *testing.T) {
	cfg := RouterConfig{URLs: "nats://127.0.0.1:1", Coordinator: "checkout-1"}
	if err := cfg.Validate(); err != nil || cfg.Coordinator != "checkout-1" {
		t.Fatalf("a given name: %q %v; want it kept", cfg.Coordinator, err)
	}
	cfg = RouterConfig{URLs: "nats://127.0.0.1:1", Coordinator: "bad\x01name"}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "coordinator name") {
		t.Fatalf("a name with a control character: %v; want it refused", err)
	}
	host, _ := os.Hostname()
	seen := map[string]bool{}
	for range 100 {
		name := coordinatorDefault()
		if d := inventory.CheckID(name); d != "" {
			t.Fatalf("default name %q %s", name, d)
		}
		if len(name) > coordinatorDefaultBytesMax {
			t.Fatalf("default name %q is %d bytes; an unkeyed order's hold id keeps %d", name, len(name), coordinatorDefaultBytesMax)
		}
		rest := name[:strings.LastIndexByte(name, '-')]
		at := strings.LastIndexByte(rest, '-')
		if pid := rest[at+1:]; pid != strconv.Itoa(os.Getpid()) || !strings.HasPrefix(host, rest[:at]) {
			t.Fatalf("default name %q does not name (the start of) the hostname %q and the pid %d", name, host, os.Getpid())
		}
		if seen[name] {
			t.Fatalf("default name %q made twice", name)
		}
		seen[name] = true
	}
	r := &Router{cfg: RouterConfig{Coordinator: coordinatorDefault()}, start: time.Now().UnixNano()}
	if id := r.orderHold(""); !strings.HasPrefix(id, "o:"+r.cfg.Coordinator+".") {
		t.Fatalf("an unkeyed order's hold id %q cut its coordinator %q", id, r.cfg.Coordinator)
	}
}
