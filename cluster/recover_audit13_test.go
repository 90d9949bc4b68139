package cluster

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"allot/internal/syncbuf"
	"allot/inventory"
)

// Recover ran only when called (`allot shards recover`): a router that ran
// for days never finished what a crashed coordinator left, a decided order
// stayed confirmed on one shard and held on the other until someone ran
// the command, and by then its holds had expired (a partial order). With
// RouterConfig.RecoverEvery a router runs Recover in the background.

// TestRouterRecoversInTheBackground: a coordinator dies among its
// confirms (a confirming record) and another among its holds (a holding
// one); a router with RecoverEvery confirms the first and cancels the
// second, without anyone calling Recover, logs what it did, and its loop
// has ended when Close returns.
func TestRouterRecoversInTheBackground(t *testing.T) {
	sc, r, _, a, b := crossShards(t, "bg", 10, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	lines := []inventory.Demand{{Group: a, N: 2}, {Group: b, N: 3}}
	r.crash = func(step string, part int) bool { return step == "confirm" && part == 1 }
	if _, err := r.Order(ctx, "k-bg1", lines); !errors.Is(err, errCrashed) {
		t.Fatalf("order 1: %v", err)
	}
	r.crash = func(step string, part int) bool { return step == "hold" && part == 1 }
	if _, err := r.Order(ctx, "k-bg2", lines); !errors.Is(err, errCrashed) {
		t.Fatalf("order 2: %v", err)
	}
	r.crash = nil
	decided, undecided := r.orderHold("k-bg1"), r.orderHold("k-bg2")
	for hold, want := range map[string]string{decided: stConfirming, undecided: stHolding} {
		if rec, _, _, err := r.load(ctx, hold); err != nil || rec.State != want {
			t.Fatalf("the dead coordinator's record %s: %+v %v; want %s", hold, rec, err, want)
		}
	}

	var logs lockedBuffer
	sweeper := sc.router("sweeper-bg", func(c *RouterConfig) {
		c.RecoverEvery, c.RecoverAfter = 200*time.Millisecond, time.Millisecond
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	// No Recover call: the sweeper's loop must finish both.
	for hold, want := range map[string]string{decided: stConfirmed, undecided: stCancelled} {
		var rec *record
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			var err error
			if rec, _, _, err = r.load(ctx, hold); err != nil {
				t.Fatal(err)
			}
			if rec.State == want || time.Now().After(deadline) {
				break
			}
		}
		if rec.State != want {
			t.Fatalf("record %s is %s 30s after a router with RecoverEvery %v started; want %s (logs: %s)",
				hold, rec.State, sweeper.cfg.RecoverEvery, want, logs.String())
		}
	}
	for _, g := range []inventory.GroupKey{a, b} {
		if get, err := r.call(ctx, r.m.Of(g), inventory.HoldGet(decided)); err != nil || get.State != inventory.HoldConfirmed {
			t.Fatalf("order 1's part on %s: %+v %v; want confirmed", r.m.Of(g), get, err)
		}
	}
	if get, err := r.call(ctx, r.m.Of(a), inventory.HoldGet(undecided)); err != nil || get.State != inventory.HoldCancelled {
		t.Fatalf("order 2's held part: %+v %v; want cancelled", get, err)
	}
	if n := available(t, ctx, r, a); n != 20-2 {
		t.Fatalf("group a at %d, want 18 (order 1 confirmed, order 2 cancelled)", n)
	}
	if got := logs.String(); !strings.Contains(got, "confirmed=1") || !strings.Contains(got, "cancelled=1") {
		t.Fatalf("the background recovery's log does not say what it did:\n%s", got)
	}
	sweeper.Close()
	select {
	case <-sweeper.recoverDone:
	default:
		t.Fatal("the background recovery still runs after Close returned")
	}
}

// TestRecoverEveryRefusedBelowItsMinimum: a negative interval, or one so
// short that the passes would follow each other back to back, is refused.
func TestRecoverEveryRefusedBelowItsMinimum(t *testing.T) {
	for _, every := range []time.Duration{-time.Second, time.Millisecond} {
		cfg := RouterConfig{URLs: "nats://127.0.0.1:1", Coordinator: "c", RecoverEvery: every}
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "recover") {
			t.Errorf("RecoverEvery %v: %v; want it refused", every, err)
		}
	}
	cfg := RouterConfig{URLs: "nats://127.0.0.1:1", Coordinator: "c"}
	if err := cfg.Validate(); err != nil || cfg.RecoverEvery != 0 {
		t.Fatalf("no RecoverEvery: %v, %v; want 0 (off)", err, cfg.RecoverEvery)
	}
}

// lockedBuffer is a bytes.Buffer a logger writes to while a test reads it.
type lockedBuffer = syncbuf.Buffer
