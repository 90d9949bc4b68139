package client

import (
	"bufio"
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"allot/inventory"
)

// The requests of these tests never leave the client: the caller must be
// able to tell them from those sent whose outcome is unknown
// (MaybeApplied false), and still see why (its context's error).

var auditGroup = inventory.GroupKey{SKU: "sku-1", Condition: "new", Source: "retail"}

// pastDeadline is a context whose deadline has passed while its own timer
// has not run yet (Err still nil), as a loaded machine shows.
type pastDeadline struct{ context.Context }

func (pastDeadline) Deadline() (time.Time, bool) { return time.Now().Add(-time.Millisecond), true }

// countingServer reads RESP commands and answers none; it counts the
// commands it has read whole.
func countingServer(t *testing.T) (string, *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	commands := new(atomic.Int64)
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer nc.Close()
				rd := bufio.NewReader(nc)
				for {
					h, err := rd.ReadString('\n')
					if err != nil || !strings.HasPrefix(h, "*") {
						return
					}
					n, _ := strconv.Atoi(strings.TrimSpace(h[1:]))
					for range 2 * n {
						if _, err := rd.ReadString('\n'); err != nil {
							return
						}
					}
					commands.Add(1)
				}
			}()
		}
	}()
	return ln.Addr().String(), commands
}

// notSentCheck fails t unless err says the caller's context ended (want)
// and the request was never sent.
func notSentCheck(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Errorf("%s: %v; want it to say %v", what, err, want)
	}
	if MaybeApplied(err) {
		t.Errorf("%s: %v: a request never sent is classed maybe applied", what, err)
	}
	if !errors.Is(err, ErrNotSent) {
		t.Errorf("%s: %v: want ErrNotSent", what, err)
	}
}

// TestPoolWaitIsNotSent: a caller whose context ends while every pooled
// connection is in use sent nothing.
func TestPoolWaitIsNotSent(t *testing.T) {
	c, err := New(Config{Addr: stalledServer(t), PoolSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	held, err := c.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = c.Capture(ctx, auditGroup, 1, nil)
	notSentCheck(t, "a capture waiting for a free connection", err, context.DeadlineExceeded)

	ended, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = c.Capture(ended, auditGroup, 1, nil)
	notSentCheck(t, "a capture whose context had ended", err, context.Canceled)
}

// TestPastDeadlineIsNotSent: a connection given a context whose deadline
// has passed (its timer not run yet) sends nothing, and stays usable: the
// socket's deadline was set in the past and the write failed before a
// byte left, but the request was classed maybe applied and the
// connection thrown away.
func TestPastDeadlineIsNotSent(t *testing.T) {
	addr, commands := countingServer(t)
	c, err := New(Config{Addr: addr, PoolSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cn, err := c.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer cn.Close()
	_, err = cn.Do(pastDeadline{context.Background()}, inventory.Capture(auditGroup, 1), nil)
	notSentCheck(t, "a capture past its deadline", err, context.DeadlineExceeded)
	if cn.Err() != nil {
		t.Errorf("the connection broke for a request it never sent: %v", cn.Err())
	}
	time.Sleep(50 * time.Millisecond)
	if n := commands.Load(); n != 0 {
		t.Errorf("the server read %d commands", n)
	}
}

// TestBatcherQueuedCallIsNotSentAfterItsContextEnds: a call still in the
// Batcher's queue (two pipelines on the wire, no reply coming) when its
// caller's context ends is taken out and not sent: it was sent later,
// with nobody waiting for it, and its caller waited for it and was told
// "maybe applied".
func TestBatcherQueuedCallIsNotSentAfterItsContextEnds(t *testing.T) {
	addr, commands := countingServer(t)
	c, err := New(Config{Addr: addr, PoolSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	b := newBatcher(c, time.Second, BatcherQueueMax)
	op := inventory.Available(auditGroup)
	var wg sync.WaitGroup
	for i := range pipelinesInFlight {
		wg.Go(func() { b.Do(context.Background(), op, nil) })
		for end := time.Now().Add(2 * time.Second); commands.Load() <= int64(i) && time.Now().Before(end); {
			time.Sleep(time.Millisecond)
		}
	}
	if n := commands.Load(); n != pipelinesInFlight {
		t.Fatalf("%d pipelines on the wire, want %d", n, pipelinesInFlight)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = b.Do(ctx, op, nil)
	waited := time.Since(start)
	b.Close()
	wg.Wait()
	notSentCheck(t, "a queued call whose context ended", err, context.DeadlineExceeded)
	if waited > 600*time.Millisecond {
		t.Errorf("the queued call returned %v after its context ended", waited-100*time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
	if n := commands.Load(); n != pipelinesInFlight {
		t.Errorf("the server read %d commands, want %d: the call was sent after its caller gave up", n, pipelinesInFlight)
	}
}

// TestBatcherRefusalsAreNotSent: a call to a closed Batcher, and one
// whose context ends while it waits for room in the queue, sent nothing.
func TestBatcherRefusalsAreNotSent(t *testing.T) {
	addr, _ := countingServer(t)
	c, err := New(Config{Addr: addr, PoolSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	op := inventory.Available(auditGroup)

	b := newBatcher(c, 300*time.Millisecond, 1)
	var wg sync.WaitGroup
	for range pipelinesInFlight + 1 { // two on the wire, one queued: the queue is full
		wg.Go(func() { b.Do(context.Background(), op, nil) })
		time.Sleep(20 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = b.Do(ctx, op, nil)
	notSentCheck(t, "a call waiting for room in the queue", err, context.DeadlineExceeded)
	b.Close()
	wg.Wait()

	_, err = b.Do(context.Background(), op, nil)
	notSentCheck(t, "a call to a closed batcher", err, ErrBatcherClosed)
}
