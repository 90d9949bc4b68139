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

// TestCrossShardOrderNearItsDeadlineIsNotConfirmedIntoAFailover: the
// commit margin must cover a shard's failover. An order is decided by
// comparing the router's clock plus CommitMargin with its parts'
// deadlines; once it is decided confirming, a part whose shard fails over
// is confirmed only after the lease TTL and a catch up. With the old
// margin (2 s, below the 3 s lease TTL) an order whose first part had
// 2.5 s left (its other part's hold was slow) was decided confirming, its
// first shard's primary hung (SIGSTOP) right then, and the confirm landed
// on the new primary after the part's deadline: EXPIRED there, confirmed
// on the other shard, a partial order. With a margin that covers a
// failover the order is cancelled instead, through the same failover:
// nothing applied anywhere.
func TestCrossShardOrderNearItsDeadlineIsNotConfirmedIntoAFailover(t *testing.T) {
	const left = 2500 * time.Millisecond // the first part's time to its deadline when the order is decided
	sc, r, _, a, b := crossShards(t, "mg", 10, func(c *RouterConfig) { c.HoldTTL = 12 * time.Second })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	shard := sc.shards[r.m.Of(a)] // part 0's: lines[0] names a
	shard.start("n2")
	old := shard.nodes["n1"]
	lines := []inventory.Demand{{Group: a, N: 2}, {Group: b, N: 3}}

	var heldAt time.Time
	paused := make(chan struct{})
	r.crash = func(step string, part int) bool {
		switch {
		case step == "hold" && part == 0:
			heldAt = time.Now()
		case step == "hold" && part == 1:
			// b's hold is slow (its shard was busy, or failing over): a's
			// is left with `left` to its deadline at the decision.
			time.Sleep(time.Until(heldAt.Add(r.cfg.HoldTTL - left)))
		case step == "decided":
			old.kill(syscall.SIGSTOP)
			close(paused)
		}
		return false
	}
	type reply struct {
		res inventory.Result
		err error
	}
	done := make(chan reply, 1)
	go func() {
		res, err := r.Order(ctx, "k-mg", lines)
		done <- reply{res, err}
	}()
	t.Cleanup(func() { old.kill(syscall.SIGCONT) })
	select {
	case <-paused:
	case got := <-done:
		t.Fatalf("the order ended before its decision: %+v %v", got.res, got.err)
	}
	pausedAt := time.Now()
	shard.waitPrimary("n1", 30*time.Second)
	failover := time.Since(pausedAt)
	// The primary hung through the failover and past the part's deadline
	// (the failover alone takes longer than `left`); resumed, it steps
	// down, and what it was sent goes to the new primary.
	time.Sleep(time.Until(heldAt.Add(r.cfg.HoldTTL + 200*time.Millisecond)))
	old.kill(syscall.SIGCONT)
	got := <-done
	hold := r.orderHold("k-mg")
	rec, _, _, lerr := r.load(ctx, hold)
	if rec == nil {
		rec = &record{}
	}
	t.Logf("failover of %s took %v; order: %+v %v; record %s (%s)", shard.shard, failover.Round(time.Millisecond), got.res, got.err, rec.State, rec.Failure)
	if !errors.Is(got.err, client.ErrUnavailable) || errors.Is(got.err, client.ErrOutcomeUnknown) || lerr != nil || rec.State != stCancelled {
		t.Fatalf("an order decided with %v left on a part whose shard then failed over (margin %v): %+v %v; record %s (%s); want it cancelled, nothing applied (all or nothing)",
			left, r.cfg.CommitMargin, got.res, got.err, rec.State, rec.Failure)
	}
	for _, g := range []inventory.GroupKey{a, b} {
		get, err := r.call(ctx, r.m.Of(g), inventory.HoldGet(hold))
		if err != nil || get.State == inventory.HoldConfirmed || get.State == inventory.HoldHeld {
			t.Fatalf("part on %s: %+v %v; want cancelled or expired", r.m.Of(g), get, err)
		}
		if n := available(t, ctx, r, g); n != 20 {
			t.Fatalf("group %v holds %d after the cancelled order, want 20", g, n)
		}
	}
}
