package cluster

import (
	"context"
	"errors"
	"os/exec"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"allot/client"
	"allot/inventory"
)

// Edges of cross-shard holds and orders as a checkout meets them: repeats,
// shards down in the middle of a decision, and ids that must not collide.

func available(t *testing.T, ctx context.Context, r *Router, g inventory.GroupKey) int64 {
	t.Helper()
	res, err := r.Do(ctx, inventory.Available(g), nil)
	if err != nil {
		t.Fatalf("available %v: %v", g, err)
	}
	return res.Count
}

// TestCrossShardHoldRepeatAfterCancel: DESIGN "Idempotency": a repeat HOLD
// with the same id and lines returns the original allocation even once the
// hold was cancelled, as it does on one shard.
func TestCrossShardHoldRepeatAfterCancel(t *testing.T) {
	_, r, _, a, b := crossShards(t, "rc", 10, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	lines := []inventory.Demand{{Group: a, N: 3}, {Group: b, N: 2}}
	first, err := r.Hold(ctx, "cart-rc", time.Minute, lines)
	if err != nil || first.Code != inventory.CodeOK {
		t.Fatalf("hold: %+v %v", first, err)
	}
	if c, err := r.Cancel(ctx, "cart-rc"); err != nil || c.Code != inventory.CodeOK {
		t.Fatalf("cancel: %+v %v", c, err)
	}
	again, err := r.Hold(ctx, "cart-rc", time.Minute, lines)
	if err != nil || again.Code != inventory.CodeOK || again.ExpiresAt != first.ExpiresAt ||
		!reflect.DeepEqual(again.Allocations, first.Allocations) {
		t.Fatalf("a repeat of a cancelled hold: %+v %v; want the original %+v", again, err, first)
	}
	// The repeat applied nothing: the cancelled units stay available.
	if got := available(t, ctx, r, a); got != 20 {
		t.Fatalf("group a at %d after the repeat, want 20", got)
	}
}

// TestCrossShardConfirmWithShardDown: a Confirm of a cross-shard hold that
// meets a shard without a primary has recorded its decision and confirmed
// the other part, so it must not say "not applied"; once the shard is
// back, the same Confirm finishes it and says OK.
func TestCrossShardConfirmWithShardDown(t *testing.T) {
	sc, r, _, a, b := crossShards(t, "cd", 10, func(c *RouterConfig) { c.RetryFor = time.Second })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	lines := []inventory.Demand{{Group: a, N: 3}, {Group: b, N: 2}}
	if res, err := r.Hold(ctx, "cart-cd", time.Minute, lines); err != nil || res.Code != inventory.CodeOK {
		t.Fatalf("hold: %+v %v", res, err)
	}
	down := sc.shards[r.m.Of(b)]
	down.nodes["n1"].kill(syscall.SIGKILL)
	_, err := r.Confirm(ctx, "cart-cd")
	if err == nil || errors.Is(err, client.ErrUnavailable) || !errors.Is(err, client.ErrOutcomeUnknown) {
		t.Fatalf("confirm with shard %s down: %v; want an unknown outcome (a part is confirmed)", down.shard, err)
	}
	if get, err := r.call(ctx, r.m.Of(a), inventory.HoldGet("cart-cd")); err != nil || get.State != inventory.HoldConfirmed {
		t.Fatalf("the part on the live shard: %+v %v", get, err)
	}
	down.start("n1")
	down.waitPrimary("", 30*time.Second)
	res, err := r.Confirm(ctx, "cart-cd")
	if err != nil || res.Code != inventory.CodeOK {
		t.Fatalf("the same confirm once the shard is back: %+v %v", res, err)
	}
	if get, err := r.HoldGet(ctx, "cart-cd"); err != nil || get.State != inventory.HoldConfirmed {
		t.Fatalf("hold.get: %+v %v", get, err)
	}
	if get, err := r.call(ctx, r.m.Of(b), inventory.HoldGet("cart-cd")); err != nil || get.State != inventory.HoldConfirmed {
		t.Fatalf("the part on the shard that was down: %+v %v", get, err)
	}
}

// TestSingleShardConfirmWithOtherShardDown: a hold on one shard has no
// record, so Confirm asks every shard; a shard that does not hold it
// being down must neither fail the confirm nor call it "not applied".
func TestSingleShardConfirmWithOtherShardDown(t *testing.T) {
	sc, r, _, a, b := crossShards(t, "sd", 10, func(c *RouterConfig) { c.RetryFor = time.Second })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if res, err := r.Hold(ctx, "cart-sd", time.Minute, []inventory.Demand{{Group: a, N: 3}}); err != nil || res.Code != inventory.CodeOK {
		t.Fatalf("hold: %+v %v", res, err)
	}
	sc.shards[r.m.Of(b)].nodes["n1"].kill(syscall.SIGKILL)
	res, err := r.Confirm(ctx, "cart-sd")
	get, gerr := r.call(ctx, r.m.Of(a), inventory.HoldGet("cart-sd"))
	if gerr != nil || get.State != inventory.HoldConfirmed {
		t.Fatalf("the hold's shard: %+v %v", get, gerr)
	}
	if err != nil || res.Code != inventory.CodeOK {
		t.Fatalf("confirm with another shard down: %+v %v (unavailable: %v); the hold is confirmed",
			res, err, errors.Is(err, client.ErrUnavailable))
	}
}

// TestCrossShardOrderKeyNotAnAttempt: an order whose key looks like
// another key's later attempt ("x#1") is an order of its own: it must
// take stock, not be answered by the other order's confirmed holds.
func TestCrossShardOrderKeyNotAnAttempt(t *testing.T) {
	_, r, _, a, b := crossShards(t, "ka", 100, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	lines := []inventory.Demand{{Group: a, N: 2}, {Group: b, N: 3}}
	// Order "x" dies among its holds and is recovered (cancelled after a
	// failure), so its repeat runs as attempt 1.
	r.crash = func(step string, part int) bool { return step == "hold" && part == 1 }
	if _, err := r.Order(ctx, "x", lines); !errors.Is(err, errCrashed) {
		t.Fatalf("order x: %v", err)
	}
	r.crash = nil
	if _, err := r.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	if res, err := r.Order(ctx, "x", lines); err != nil || res.Code != inventory.CodeOK {
		t.Fatalf("order x again: %+v %v", res, err)
	}
	if got := available(t, ctx, r, a); got != 198 {
		t.Fatalf("group a at %d after order x, want 198", got)
	}
	res, err := r.Order(ctx, "x#1", lines)
	if err != nil || res.Code != inventory.CodeOK {
		t.Fatalf("order x#1: %+v %v", res, err)
	}
	if got := available(t, ctx, r, a); got != 196 {
		t.Fatalf("group a at %d after order x#1 was acknowledged, want 196 (it took nothing)", got)
	}
}

// TestCrossShardOrderReplies: the replies a checkout reads: the first
// short line in request order when it is on the second shard, a group
// named twice summed, a repeat answered with the first reply and applied
// nothing, other lines under a used key a MISMATCH.
func TestCrossShardOrderReplies(t *testing.T) {
	_, r, groups, a, b := crossShards(t, "or", 10, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// b (line 1, on the second shard) and c (line 3, on the first) are
	// short, a (lines 0 and 2, summed) is not: line 1 comes first.
	var c inventory.GroupKey
	for _, g := range groups[1:] {
		if r.m.Of(g) == r.m.Of(a) {
			c = g
		}
	}
	if c == (inventory.GroupKey{}) {
		t.Fatal("no second group on a's shard")
	}
	short := []inventory.Demand{{Group: a, N: 5}, {Group: b, N: 21}, {Group: a, N: 6}, {Group: c, N: 30}}
	res, err := r.Order(ctx, "short", short)
	if err != nil || res.Code != inventory.CodeInsufficient || res.ShortLine != 1 || res.Available != 20 {
		t.Fatalf("short order: %+v %v; want line 1 short, 20 available", res, err)
	}
	again, err := r.Order(ctx, "short", short)
	if err != nil || again.Code != res.Code || again.ShortLine != res.ShortLine || again.Available != res.Available {
		t.Fatalf("a repeat of the short order: %+v %v; want %+v", again, err, res)
	}
	lines := []inventory.Demand{{Group: b, N: 4}, {Group: a, N: 6}, {Group: b, N: 5}}
	first, err := r.Order(ctx, "ok", lines)
	if err != nil || first.Code != inventory.CodeOK {
		t.Fatalf("order: %+v %v", first, err)
	}
	var got []int64
	var order []inventory.GroupKey
	for _, al := range first.Allocations {
		if len(order) == 0 || order[len(order)-1] != al.Row.Group() {
			order = append(order, al.Row.Group())
			got = append(got, 0)
		}
		got[len(got)-1] += al.Count
	}
	if !reflect.DeepEqual(order, []inventory.GroupKey{b, a}) || !reflect.DeepEqual(got, []int64{9, 6}) {
		t.Fatalf("allocations %+v: want b 9 then a 6", first.Allocations)
	}
	again, err = r.Order(ctx, "ok", lines)
	if err != nil || again.Code != inventory.CodeOK || !reflect.DeepEqual(again.Allocations, first.Allocations) {
		t.Fatalf("a repeat: %+v %v; want %+v", again, err, first)
	}
	if av := available(t, ctx, r, b); av != 11 {
		t.Fatalf("group b at %d, want 11 (applied once)", av)
	}
	mm, err := r.Order(ctx, "ok", lines[:2])
	if err != nil || mm.Code != inventory.CodeMismatch {
		t.Fatalf("other lines under a used key: %+v %v", mm, err)
	}
	if av := available(t, ctx, r, b); av != 11 {
		t.Fatalf("group b at %d after the mismatch, want 11", av)
	}
}

// TestRouteReadsFollowFailover: after a failover the old primary comes
// back as a standby at the address the router's pool still names; its
// "not primary" refusals must move the router to the new primary, or
// every later read of the shard is served by the standby, a moment
// behind the writes the router itself just made.
func TestRouteReadsFollowFailover(t *testing.T) {
	sc := newSharded(t, 1)
	s0 := sc.shards["s0"]
	s0.start("n2")
	r := sc.router("rf", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	g := groupKey("rf0")
	if res, err := r.Do(ctx, inventory.Stock(g.Row("w1"), 1000, 1), nil); err != nil || res.Code != inventory.CodeOK {
		t.Fatalf("stock: %+v %v", res, err)
	}
	old := s0.nodes[s0.primary()]
	old.kill(syscall.SIGKILL)
	now := s0.waitPrimary(old.id, 30*time.Second)
	s0.start(old.id) // a standby now
	stale := 0
	for i := range 100 {
		if res, err := r.Do(ctx, inventory.Capture(g, 1), nil); err != nil || res.Code != inventory.CodeOK {
			t.Fatalf("capture %d: %+v %v", i, res, err)
		}
		res, err := r.Do(ctx, inventory.Available(g), nil)
		if err != nil {
			t.Fatalf("available %d: %v", i, err)
		}
		if res.Count != int64(1000-i-1) {
			stale++
		}
	}
	r.mu.Lock()
	addr := r.pools["s0"].Addr()
	r.mu.Unlock()
	if stale > 0 || addr != now.resp {
		t.Fatalf("%d of 100 reads after the router's own capture were stale; the router's pool is at %s, the primary %s at %s (%s is a standby)",
			stale, addr, now.id, now.resp, old.resp)
	}
}

// TestShardsRecoverAfterZero: `allot shards recover --after 0` finishes
// every coordinator's records at once, as --after 1ms does; zero must not
// read as "the default, 30 s".
func TestShardsRecoverAfterZero(t *testing.T) {
	sc := newSharded(t, 2)
	r := sc.router("gone", nil)
	groups := stockGroups(t, r, "az", 8, 10)
	a, b := crossPair(t, r, groups)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// It dies among the holds: a's part held, the record says holding.
	r.crash = func(step string, part int) bool { return step == "hold" && part == 1 }
	if _, err := r.Order(ctx, "az", []inventory.Demand{{Group: a, N: 2}, {Group: b, N: 3}}); !errors.Is(err, errCrashed) {
		t.Fatalf("order: %v", err)
	}
	out, err := exec.Command(sc.shards["s0"].bin, "shards", "recover", "--cluster", sc.urls, "--after", "0").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "cancelled 1,") {
		t.Fatalf("allot shards recover --after 0: %v %s", err, out)
	}
	if got := available(t, ctx, r, a); got != 20 {
		t.Fatalf("group a at %d after the recovery, want 20", got)
	}
}

// TestRouteUnknownStaysUnknown: a keyed order on one shard whose first
// attempt was sent and lost (its primary died before answering) may be
// applied; the refusals of the retries that follow (no primary) must not
// turn it into "not applied".
func TestRouteUnknownStaysUnknown(t *testing.T) {
	sc := newSharded(t, 1)
	s0 := sc.shards["s0"]
	r := sc.router("uu", func(c *RouterConfig) { c.RetryFor = 8 * time.Second })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	g := groupKey("uu0")
	if res, err := r.Do(ctx, inventory.Stock(g.Row("w1"), 10, 1), nil); err != nil || res.Code != inventory.CodeOK {
		t.Fatalf("stock: %+v %v", res, err)
	}
	// The node hangs with the request in its socket, then dies: the
	// request was sent and its reply lost; with no standby the lease
	// then lapses and every retry is refused.
	node := s0.nodes["n1"]
	node.kill(syscall.SIGSTOP)
	done := make(chan error, 1)
	go func() {
		_, err := r.Order(ctx, "uu-1", []inventory.Demand{{Group: g, N: 1}})
		done <- err
	}()
	time.Sleep(300 * time.Millisecond)
	node.kill(syscall.SIGKILL)
	err := <-done
	if err == nil || errors.Is(err, client.ErrUnavailable) || !errors.Is(err, client.ErrOutcomeUnknown) {
		t.Fatalf("an order whose first attempt was lost: %v; want an unknown outcome, never \"not applied\"", err)
	}
}

// TestCrossShardHoldShorterThanTheMargin: a hold across shards whose TTL is
// within the commit margin is refused as invalid, up front. Taken, it
// could never be confirmed: Confirm answered EXPIRED while it was still
// held, and its units stayed out until the deadline.
func TestCrossShardHoldShorterThanTheMargin(t *testing.T) {
	_, r, _, a, b := crossShards(t, "tm", 10, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	lines := []inventory.Demand{{Group: a, N: 1}, {Group: b, N: 1}}
	res, err := r.Hold(ctx, "cart-tm", r.cfg.CommitMargin, lines)
	if err != nil || res.Code != inventory.CodeInvalid || !strings.Contains(res.Detail, "commit margin") {
		t.Fatalf("a hold across shards for the commit margin: %+v %v; want it refused as invalid", res, err)
	}
	if got := available(t, ctx, r, a); got != 20 {
		t.Fatalf("group a at %d after the refused hold, want 20", got)
	}
	// Just past the margin, it is taken and confirmed.
	if res, err := r.Hold(ctx, "cart-tm", r.cfg.CommitMargin+3*time.Second, lines); err != nil || res.Code != inventory.CodeOK {
		t.Fatalf("a hold across shards past the margin: %+v %v", res, err)
	}
	if res, err := r.Confirm(ctx, "cart-tm"); err != nil || res.Code != inventory.CodeOK {
		t.Fatalf("confirm: %+v %v", res, err)
	}
}

// crossShards is the start of a cross-shard test: two shards, a router
// (prefix names it; opt, if not nil, changes its config), eight groups
// of prefix stocked with perRow units a row, and a and b, two of them on
// different shards.
func crossShards(t *testing.T, prefix string, perRow int64, opt func(*RouterConfig)) (sc *shardedCluster, r *Router, groups []inventory.GroupKey, a, b inventory.GroupKey) {
	t.Helper()
	sc = newSharded(t, 2)
	r = sc.router(prefix, opt)
	groups = stockGroups(t, r, prefix, 8, perRow)
	a, b = crossPair(t, r, groups)
	return sc, r, groups, a, b
}
