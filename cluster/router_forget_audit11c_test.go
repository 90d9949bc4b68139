package cluster

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"allot/client"
	"allot/inventory"
)

// TestRouterCancelledCallKeepsThePool: a caller whose context ends
// mid-request must not close the shard's pool under the other callers.
// It did (forget after any error), and an unkeyed capture that had just
// taken the pool got "client: closed", not retried, though nothing was
// sent.
func TestRouterCancelledCallKeepsThePool(t *testing.T) {
	sc := newSharded(t, 1)
	r := sc.router("forget", nil)
	g := stockGroups(t, r, "f", 1, 1<<40)[0]

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var cancelled, done atomic.Int64
	var mu sync.Mutex
	var fails []string
	// Callers whose contexts end mid-request.
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Duration(50+i%200)*time.Microsecond)
				if _, err := r.Do(ctx, inventory.Capture(g, 1), nil); err != nil {
					cancelled.Add(1)
				}
				cancel()
			}
		}()
	}
	// Unkeyed captures with time enough: each must succeed.
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				res, err := r.Do(ctx, inventory.Capture(g, 1), nil)
				cancel()
				if err != nil || res.Code != inventory.CodeOK {
					mu.Lock()
					fails = append(fails, res.Code.String()+" "+errString(err))
					mu.Unlock()
					if errors.Is(err, client.ErrClosed) {
						return
					}
					continue
				}
				done.Add(1)
			}
		}()
	}
	time.Sleep(3 * time.Second)
	close(stop)
	wg.Wait()
	t.Logf("%d captures, %d cancelled calls", done.Load(), cancelled.Load())
	if cancelled.Load() == 0 {
		t.Fatal("no call was cancelled: the test tests nothing")
	}
	if len(fails) > 0 {
		n := min(len(fails), 5)
		t.Fatalf("%d captures failed, first: %s", len(fails), strings.Join(fails[:n], "; "))
	}
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// silentServer accepts connections, reads what they send and never
// answers.
func silentServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer nc.Close()
				io.Copy(io.Discard, nc)
			}()
		}
	}()
	return ln.Addr().String()
}

// TestRouterForgetsOnlyWhatThePrimaryCaused: a call that fails because
// its own context ended leaves the shard's pool open for the others
// (they got "client: closed"); and an op refused by a closed pool, which
// sent nothing, is a refusal the router retries.
func TestRouterForgetsOnlyWhatThePrimaryCaused(t *testing.T) {
	p, err := client.New(client.Config{Addr: silentServer(t), PoolSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	r := &Router{cfg: RouterConfig{RetryFor: time.Second}, pools: map[string]*client.Client{"s0": p}}
	op := inventory.Capture(groupKey("a"), 1)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	_, err = r.call(ctx, "s0", op)
	cancel()
	if err == nil {
		t.Fatal("a call to a silent server succeeded")
	}
	cn, err := p.Conn(context.Background())
	if err != nil {
		t.Fatalf("the pool after another caller's context ended: %v; want it open", err)
	}
	cn.Close()
	if r.pools["s0"] != p {
		t.Fatal("the pool was dropped for a caller's own deadline")
	}
	p.Close()
	_, err = p.Conn(context.Background())
	if !errors.Is(err, client.ErrClosed) {
		t.Fatalf("closed pool: %v", err)
	}
	if !client.Retryable(&op, err) || !errors.Is(err, client.ErrUnavailable) || client.MaybeApplied(err) {
		t.Fatalf("%v: retryable %v, unavailable %v, maybe applied %v; want a refusal, retried",
			err, client.Retryable(&op, err), errors.Is(err, client.ErrUnavailable), client.MaybeApplied(err))
	}
}
