package client

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"allot/inventory"
)

// stalledServer accepts connections and reads whatever comes, answering
// nothing: a server that stopped replying.
func stalledServer(t *testing.T) string {
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
			go func() { io.Copy(io.Discard, nc); nc.Close() }()
		}
	}()
	return ln.Addr().String()
}

// batcherQueueMost runs callers against a batcher of queue bound queueMax
// on a server that never answers, and returns the longest queue seen over
// window and how many callers gave up waiting for room when their ctx
// ended.
func batcherQueueMost(t *testing.T, queueMax, callers int, window time.Duration) (most, gaveUp int) {
	c, err := New(Config{Addr: stalledServer(t), PoolSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	b := newBatcher(c, 300*time.Millisecond, queueMax)
	defer b.Close()
	ctx, cancel := context.WithCancel(context.Background())
	errs := make(chan error, callers)
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			_, err := b.Do(ctx, inventory.Get(inventory.RowKey{SKU: "a", Warehouse: "w1", Condition: "new", Source: "s1"}), nil)
			errs <- err
		})
	}
	for end := time.Now().Add(window); time.Now().Before(end); time.Sleep(time.Millisecond) {
		b.mu.Lock()
		most = max(most, len(b.queue))
		b.mu.Unlock()
	}
	cancel()
	wg.Wait()
	close(errs)
	for err := range errs {
		switch {
		case errors.Is(err, context.Canceled):
			gaveUp++
		case err == nil:
			t.Error("a call to a server that never answers succeeded")
		}
	}
	return most, gaveUp
}

// TestBatcherQueueIsBounded: with two pipelines on the wire and no reply
// coming, callers queue up to the bound and no further; those waiting for
// room give up when their ctx ends, the queued ones get the round trip's
// timeout.
func TestBatcherQueueIsBounded(t *testing.T) {
	const queueMax, callers = 4, 40
	most, gaveUp := batcherQueueMost(t, queueMax, callers, 100*time.Millisecond)
	if most > queueMax {
		t.Fatalf("%d calls queued, over the bound %d", most, queueMax)
	}
	if most < queueMax {
		t.Fatalf("the queue never filled (%d of %d): the test saw nothing", most, queueMax)
	}
	// At most two pipelines of at most queueMax calls each left the queue.
	if want := callers - queueMax - 2*queueMax; gaveUp < want {
		t.Fatalf("%d callers gave up waiting for room, want at least %d", gaveUp, want)
	}
}

// TestBatcherQueueCheckSeesAnUnboundedQueue proves the check's power:
// callers against a batcher bounded far above them (as the batcher was
// before it had a bound) pile up in the queue once two full pipelines are
// on the wire.
func TestBatcherQueueCheckSeesAnUnboundedQueue(t *testing.T) {
	if most, _ := batcherQueueMost(t, BatcherQueueMax, 2*BatchSizeMax+100, 200*time.Millisecond); most <= 4 {
		t.Fatalf("unbounded, the queue held %d calls at most; the check cannot tell it from a bound of 4", most)
	}
}
