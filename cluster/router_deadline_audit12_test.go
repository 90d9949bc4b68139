package cluster

import (
	"context"
	"errors"
	"testing"
	"time"

	"allot/client"
	"allot/inventory"
)

// lateTimer is a context whose deadline has passed while its own timer
// has not run yet (Err still nil): what a loaded machine shows between
// the socket's timeout, which carries the deadline, and the context's
// timer goroutine.
type lateTimer struct{ context.Context }

func (lateTimer) Deadline() (time.Time, bool) { return time.Now().Add(-time.Millisecond), true }

// TestRouterKeepsThePoolWhenTheSocketTimesOutFirst: the socket's timeout
// at the caller's deadline is the caller's failure even before ctx.Err()
// says so; the router closed the shard's pool for it (CI saw "client:
// closed" for the next caller on a loaded machine).
func TestRouterKeepsThePoolWhenTheSocketTimesOutFirst(t *testing.T) {
	for _, idle := range []bool{false, true} {
		name := "dial"
		if idle {
			name = "socket"
		}
		t.Run(name, func(t *testing.T) {
			p, err := client.New(client.Config{Addr: silentServer(t), PoolSize: 2})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { p.Close() })
			if idle { // the call takes this connection: its socket times out
				cn, err := p.Conn(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				cn.Close()
			}
			r := &Router{cfg: RouterConfig{RetryFor: time.Second}, pools: map[string]*client.Client{"s0": p}}
			ctx := lateTimer{context.Background()}
			_, err = r.call(ctx, "s0", inventory.Capture(groupKey("a"), 1))
			if err == nil {
				t.Fatal("a call past its deadline succeeded")
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("error %v: want it to say the caller's deadline passed", err)
			}
			if !idle && client.MaybeApplied(err) {
				t.Errorf("error %v: a connection never made is classed maybe applied", err)
			}
			cn, err := p.Conn(context.Background())
			if err != nil {
				t.Fatalf("the pool after a caller's deadline passed: %v; want it open", err)
			}
			cn.Close()
			if r.pools["s0"] != p {
				t.Fatal("the pool was dropped for a caller's own deadline")
			}
		})
	}
}

// TestRouterAttemptTimeout: a primary that holds the connection open and
// never answers (a paused process) held a call without a deadline for
// ever. An attempt now ends at AttemptTimeout: the pool is dropped (the
// next call reads the lease again) and an unkeyed capture, which may
// have been applied, ends with an unknown outcome.
func TestRouterAttemptTimeout(t *testing.T) {
	p, err := client.New(client.Config{Addr: silentServer(t), PoolSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	r := &Router{cfg: RouterConfig{RetryFor: time.Second, AttemptTimeout: 200 * time.Millisecond}, pools: map[string]*client.Client{"s0": p}}
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		_, err := r.call(context.Background(), "s0", inventory.Capture(groupKey("a"), 1))
		done <- err
	}()
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a call to a primary that never answers still waits after 10s")
	}
	t.Logf("%v after %v", err, time.Since(start))
	if err == nil || !client.MaybeApplied(err) || !errors.Is(err, client.ErrOutcomeUnknown) {
		t.Fatalf("error %v: want an unknown outcome", err)
	}
	r.mu.Lock()
	_, kept := r.pools["s0"]
	r.mu.Unlock()
	if kept {
		t.Fatal("the pool of a primary that never answered is kept")
	}
}
