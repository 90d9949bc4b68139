package cluster

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	"allot/inventory"
)

// A decided cross-shard order (its record says confirming) must end
// confirmed on every part when anyone but its coordinator finishes it,
// not "partial". Recover used to leave another coordinator's decided
// record alone until RecoverAfter (30 s by default) after it began, and
// the holds' TTL is 30 s by default too: the first recovery it allowed
// met the parts at their deadline, a CONFIRM of a due hold expired it,
// and the order was confirmed on one shard and expired on the other.

// TestCrossShardDecidedOrderRecoveredAtOnce: a coordinator dies among
// its confirms (one part confirmed, the other not sent); another
// router's Recover, right away, confirms the rest. HoldTTL and
// RecoverAfter are equal, as their defaults are.
func TestCrossShardDecidedOrderRecoveredAtOnce(t *testing.T) {
	ttl := func(c *RouterConfig) { c.HoldTTL, c.RecoverAfter = 12*time.Second, 12*time.Second }
	sc, r, _, a, b := crossShards(t, "ra", 10, ttl)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	lines := []inventory.Demand{{Group: a, N: 2}, {Group: b, N: 3}}
	r.crash = func(step string, part int) bool { return step == "confirm" && part == 1 }
	if _, err := r.Order(ctx, "k-ra", lines); !errors.Is(err, errCrashed) {
		t.Fatalf("order: %v", err)
	}
	r.crash = nil
	hold := r.orderHold("k-ra")
	if rec, _, _, err := r.load(ctx, hold); err != nil || rec.State != stConfirming {
		t.Fatalf("the dead coordinator's record: %+v %v; want confirming", rec, err)
	}
	sweeper := sc.router("sweeper-ra", ttl)
	began := time.Now()
	st, err := sweeper.Recover(ctx)
	if err != nil || st.Confirmed != 1 || st.Skipped != 0 {
		// What waiting for RecoverAfter leads to: recover as soon as it
		// is allowed, and see what is left of the order by then.
		for st.Skipped > 0 && time.Since(began) < 20*time.Second {
			time.Sleep(200 * time.Millisecond)
			st, err = sweeper.Recover(ctx)
		}
		rec, _, _, _ := r.load(ctx, hold)
		if rec == nil {
			rec = &record{}
		}
		t.Fatalf("a Recover right after the coordinator died left its decided order (want it confirmed at once); "+
			"recovered %v later: %+v %v, record %s (%s)", time.Since(began).Round(time.Millisecond), st, err, rec.State, rec.Failure)
	}
	for _, g := range []inventory.GroupKey{a, b} {
		if get, err := r.call(ctx, r.m.Of(g), inventory.HoldGet(hold)); err != nil || get.State != inventory.HoldConfirmed {
			t.Fatalf("part on %s: %+v %v; want confirmed", r.m.Of(g), get, err)
		}
	}
	if rec, _, _, err := r.load(ctx, hold); err != nil || rec.State != stConfirmed {
		t.Fatalf("record after the recovery: %+v %v; want confirmed", rec, err)
	}
	// An undecided record of another coordinator still waits for
	// RecoverAfter: its coordinator may be deciding it.
	r.crash = func(step string, part int) bool { return step == "hold" && part == 1 }
	if _, err := r.Order(ctx, "k-ra2", lines); !errors.Is(err, errCrashed) {
		t.Fatalf("order 2: %v", err)
	}
	r.crash = nil
	if st, err := sweeper.Recover(ctx); err != nil || st.Skipped != 1 || st.Cancelled != 0 {
		t.Fatalf("Recover of another coordinator's young holding record: %+v %v; want it skipped", st, err)
	}
}

// TestCrossShardConfirmOutlastsAShardOutage: a shard goes down right
// after the coordinator decided to confirm and comes back a few seconds
// later, longer than RetryFor but well within the holds' TTL. The
// coordinator keeps confirming until the holds' deadline, so the order
// is acknowledged, confirmed on both shards; it used to give up after
// RetryFor with an unknown outcome and leave the record for someone to
// finish before the deadline.
func TestCrossShardConfirmOutlastsAShardOutage(t *testing.T) {
	sc, r, _, a, b := crossShards(t, "ro", 10, func(c *RouterConfig) {
		c.RetryFor, c.HoldTTL = time.Second, 30*time.Second
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	lines := []inventory.Demand{{Group: a, N: 2}, {Group: b, N: 3}}
	down := sc.shards[r.m.Of(b)]
	decided, killed := make(chan struct{}), make(chan struct{})
	r.crash = func(step string, part int) bool {
		if step == "decided" {
			close(decided)
			<-killed
		}
		return false
	}
	type reply struct {
		res inventory.Result
		err error
	}
	done := make(chan reply, 1)
	go func() {
		res, err := r.Order(ctx, "k-ro", lines)
		done <- reply{res, err}
	}()
	<-decided
	down.nodes["n1"].kill(syscall.SIGKILL)
	killedAt := time.Now()
	close(killed)
	time.Sleep(2 * r.cfg.RetryFor)
	down.start("n1")
	down.waitPrimary("", 30*time.Second)
	t.Logf("shard %s back %v after the decision", down.shard, time.Since(killedAt).Round(time.Millisecond))
	got := <-done
	if got.err != nil || got.res.Code != inventory.CodeOK {
		rec, _, _, _ := r.load(ctx, r.orderHold("k-ro"))
		t.Fatalf("an order whose shard %s was down %v right after the decision (RetryFor %v, holds %v): %+v %v; record %+v; want OK, confirmed on both",
			down.shard, 2*r.cfg.RetryFor, r.cfg.RetryFor, r.cfg.HoldTTL, got.res, got.err, rec)
	}
	hold := r.orderHold("k-ro")
	for _, g := range []inventory.GroupKey{a, b} {
		if get, err := r.call(ctx, r.m.Of(g), inventory.HoldGet(hold)); err != nil || get.State != inventory.HoldConfirmed {
			t.Fatalf("part on %s: %+v %v; want confirmed", r.m.Of(g), get, err)
		}
	}
	if rec, _, _, err := r.load(ctx, hold); err != nil || rec.State != stConfirmed {
		t.Fatalf("record: %+v %v; want confirmed", rec, err)
	}
}
