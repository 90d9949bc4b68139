package client

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"time"

	"allot/inventory"
)

// Batcher shares one connection among many goroutines. Calls that arrive
// while a round trip is in flight wait and go out together as the next
// pipeline, in arrival order, and their replies come back together.
//
// It is how a client with many concurrent callers should talk to allot:
// the server applies a pipeline's ops as one batch (one journal write, one
// fdatasync), and callers whose replies arrive together send their next ops
// together, so batches stay full. The alternative, a connection per caller,
// leaves each caller's op to catch whichever fdatasync is next; measured on
// the seed workload with 16 callers in fsync mode, the batches then
// averaged 7 ops of 16. Go-tarantool multiplexes its connection the same
// way.
//
// A call cannot be taken back once queued: Do waits for its reply even if
// ctx ends (the op may already be applied); ctx bounds the round trip.
type Batcher struct {
	client  *Client
	timeout time.Duration // bounds one round trip

	mu     sync.Mutex
	queue  []*batchCall
	closed bool
	wake   chan struct{} // capacity 1
	done   chan struct{}

	pool sync.Pool
}

type batchCall struct {
	op   inventory.Op
	res  inventory.Result
	err  error
	done chan struct{}
}

// ErrBatcherClosed is returned by Do after Close.
var ErrBatcherClosed = errors.New("client: batcher closed")

// BatchSizeMax bounds the ops of one round trip; more wait for the next.
const BatchSizeMax = 1024

// NewBatcher starts a batcher over c's connections. timeout bounds each
// round trip (0: a minute).
func NewBatcher(c *Client, timeout time.Duration) *Batcher {
	if timeout <= 0 {
		timeout = time.Minute
	}
	b := &Batcher{client: c, timeout: timeout, wake: make(chan struct{}, 1), done: make(chan struct{})}
	b.pool.New = func() any { return &batchCall{done: make(chan struct{}, 1)} }
	go b.loop()
	return b
}

// Do queues op and returns its outcome. lines is the buffer for a
// capture's lines.
func (b *Batcher) Do(ctx context.Context, op inventory.Op, lines []inventory.Line) (inventory.Result, error) {
	if err := ctx.Err(); err != nil {
		return inventory.Result{}, err
	}
	call := b.pool.Get().(*batchCall)
	call.op, call.res, call.err = op, inventory.Result{Lines: lines}, nil
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		b.pool.Put(call)
		return inventory.Result{}, ErrBatcherClosed
	}
	b.queue = append(b.queue, call)
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default:
	}
	<-call.done
	res, err := call.res, call.err
	call.res = inventory.Result{}
	b.pool.Put(call)
	return res, err
}

// Close stops the batcher after the queued calls are answered.
func (b *Batcher) Close() {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return
	}
	b.closed = true
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default:
	}
	<-b.done
}

func (b *Batcher) loop() {
	defer close(b.done)
	var cn *Conn
	defer func() {
		if cn != nil {
			cn.Close()
		}
	}()
	var batch []*batchCall
	var ops []inventory.Op
	var results []inventory.Result
	for {
		b.mu.Lock()
		for len(b.queue) == 0 {
			if b.closed {
				b.mu.Unlock()
				return
			}
			b.mu.Unlock()
			<-b.wake
			b.mu.Lock()
		}
		// Callers answered by the last round trip are runnable and about to
		// queue their next ops; yielding once lets them, so that the next
		// pipeline carries them all instead of the first one alone.
		b.mu.Unlock()
		runtime.Gosched()
		b.mu.Lock()
		n := min(len(b.queue), BatchSizeMax)
		batch = append(batch[:0], b.queue[:n]...)
		b.queue = append(b.queue[:0], b.queue[n:]...)
		b.mu.Unlock()

		ops, results = ops[:0], results[:0]
		for _, c := range batch {
			ops = append(ops, c.op)
			results = append(results, inventory.Result{Lines: c.res.Lines})
		}
		ctx, cancel := context.WithTimeout(context.Background(), b.timeout)
		var err error
		if cn == nil || cn.Err() != nil {
			if cn != nil {
				cn.Close()
			}
			cn, err = b.client.Conn(ctx)
			if err != nil {
				cn = nil
			}
		}
		if err == nil {
			err = cn.Pipeline(ctx, ops, results)
		}
		cancel()
		for i, c := range batch {
			c.res, c.err = results[i], err
			c.done <- struct{}{}
			batch[i] = nil
		}
	}
}
