package client

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"allot/catalog"
	"allot/inventory"
)

// Batcher shares one connection among many goroutines. Calls that arrive
// while pipelines are in flight wait and go out together as the next
// pipeline, in arrival order, and their replies come back together. Up to
// pipelinesInFlight pipelines are on the wire at once.
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
// A call whose ctx ends while it is still in the queue is taken out and
// returns ctx's error with ErrNotSent: nothing was sent, and it is not
// sent later with nobody waiting for it. Once the writer took it, it
// cannot be taken back: Do waits for its reply even if ctx ends (the op
// may already be applied); the Batcher's timeout, not ctx, bounds the
// round trip. The queue holds at most BatcherQueueMax calls: a caller
// beyond them waits for room, and gives up (ErrNotSent) when its ctx
// ends. Close answers the calls queued before it; later ones get
// ErrBatcherClosed (ErrNotSent too).
//
// A Batcher neither retries a call nor follows a standby's "not primary"
// refusal: each call's reply, or error, is its caller's (Client.Do
// retries and follows).
type Batcher struct {
	client  *Client
	timeout time.Duration // bounds one round trip

	mu       sync.Mutex
	queue    []*batchCall
	queueMax int           // BatcherQueueMax but in tests
	room     chan struct{} // closed when the loop takes calls from a full queue; nil when none waits
	closed   bool
	wake     chan struct{} // capacity 1
	done     chan struct{}
	slots    chan struct{} // pipelines on the wire, at most pipelinesInFlight

	pool sync.Pool
}

type batchCall struct {
	op   inventory.Op
	ping bool // a PING instead of op: the round trip alone
	res  inventory.Result
	err  error
	done chan struct{}
}

// ErrBatcherClosed is returned by Do after Close: nothing was sent
// (errors.Is(err, ErrNotSent)).
var ErrBatcherClosed = fmt.Errorf("client: batcher closed (%w)", ErrNotSent)

// BatchSizeMax bounds the ops of one round trip; more wait for the next.
const BatchSizeMax = 1024

// BatcherQueueMax bounds the calls a Batcher holds that are not on the
// wire yet: a caller beyond it waits (until its ctx ends) for the writer
// to take calls out. Without it a server that stopped reading let the
// queue grow with every caller's next call.
const BatcherQueueMax = 1 << 16

// NewBatcher starts a batcher over c's connections. timeout bounds each
// round trip (0: a minute).
func NewBatcher(c *Client, timeout time.Duration) *Batcher {
	return newBatcher(c, timeout, BatcherQueueMax)
}

func newBatcher(c *Client, timeout time.Duration, queueMax int) *Batcher {
	if timeout <= 0 {
		timeout = time.Minute
	}
	b := &Batcher{client: c, timeout: timeout, queueMax: queueMax, wake: make(chan struct{}, 1), done: make(chan struct{}), slots: make(chan struct{}, pipelinesInFlight)}
	b.pool.New = func() any { return &batchCall{done: make(chan struct{}, 1)} }
	go func() { b.loop(); close(b.done) }()
	return b
}

// Do queues op and returns its outcome. lines is the buffer for a
// capture's lines.
func (b *Batcher) Do(ctx context.Context, op inventory.Op, lines []inventory.Line) (inventory.Result, error) {
	return b.do(ctx, op, lines, false)
}

// Search queues a SEARCH for q and appends its results to out. A query
// the server refuses is a *ServerError, as Conn.Search's.
func (b *Batcher) Search(ctx context.Context, q catalog.Query, out []catalog.Result) ([]catalog.Result, error) {
	res, err := b.Do(ctx, inventory.Search(q), nil)
	if err != nil {
		return out, err
	}
	if res.Code != inventory.CodeOK {
		return out, &ServerError{Msg: "ERR " + res.Detail}
	}
	return append(out, res.Hits...), nil
}

// Ping queues a PING and returns when its PONG is back: the round trip of
// the shared connection, batched with whatever else is queued.
func (b *Batcher) Ping(ctx context.Context) error {
	_, err := b.do(ctx, inventory.Op{}, nil, true)
	return err
}

func (b *Batcher) do(ctx context.Context, op inventory.Op, lines []inventory.Line, ping bool) (inventory.Result, error) {
	if err := ContextEnded(ctx); err != nil {
		return inventory.Result{}, notSent("client", err)
	}
	call := b.pool.Get().(*batchCall)
	call.op, call.ping, call.res, call.err = op, ping, inventory.Result{Lines: lines}, nil
	b.mu.Lock()
	for len(b.queue) >= b.queueMax && !b.closed {
		if b.room == nil {
			b.room = make(chan struct{})
		}
		room := b.room
		b.mu.Unlock()
		select {
		case <-room:
		case <-ctx.Done():
			b.pool.Put(call)
			return inventory.Result{}, notSent(fmt.Sprintf("client: waiting for room in the batcher's queue (%d calls)", b.queueMax), ctx.Err())
		}
		b.mu.Lock()
	}
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
	select {
	case <-call.done:
	case <-ctx.Done():
		if b.unqueue(call) {
			call.res = inventory.Result{}
			b.pool.Put(call)
			return inventory.Result{}, notSent("client: in the batcher's queue", ctx.Err())
		}
		<-call.done // taken by the writer: its reply decides
	}
	res, err := call.res, call.err
	call.res = inventory.Result{}
	b.pool.Put(call)
	return res, err
}

// unqueue takes call out of the queue, and reports false when the writer
// took it first.
func (b *Batcher) unqueue(call *batchCall) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	i := slices.Index(b.queue, call)
	if i < 0 {
		return false
	}
	b.queue = slices.Delete(b.queue, i, i+1)
	if b.room != nil {
		close(b.room) // callers waiting for room
		b.room = nil
	}
	return true
}

// Close stops the batcher after the queued calls are answered.
func (b *Batcher) Close() {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return
	}
	b.closed = true
	if b.room != nil {
		close(b.room) // callers waiting for room: refused now
		b.room = nil
	}
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default:
	}
	<-b.done
}

// pipelinesInFlight is how many pipelines a Batcher keeps on its connection
// at once: while the server holds one (waiting for its fdatasync), the next
// is already on the wire, so the server starts on it as soon as it has
// answered the first, without waiting a round trip for the client.
const pipelinesInFlight = 2

// sentBatch is a pipeline on the wire, waiting for its replies.
type sentBatch struct {
	calls []*batchCall
}

// batchReader reads the replies of one connection's pipelines, in order.
type batchReader struct {
	cn   *Conn
	fifo chan sentBatch
	dead atomic.Bool // the connection failed; the writer must replace it
	done chan struct{}
	// inFlight counts the pipelines sent and not yet answered, and idleAt
	// (monoNow's nanoseconds) is when the last one was answered: with none in
	// flight the reader leaves the connection alone, and the writer may
	// check it (idleClosed).
	inFlight atomic.Int32
	idleAt   atomic.Int64
}

// idleClosed reports whether the server closed the connection while no
// pipeline was on it for idleCheckAfter or more (it restarted, or a node
// of a cluster began a new term), as Client.Conn checks a pooled one: a
// pipeline sent into it would come back with an unknown outcome although
// the server never read it. Only the writer calls it.
func (rd *batchReader) idleClosed() bool {
	return rd.inFlight.Load() == 0 && time.Duration(monoNow()-rd.idleAt.Load()) >= idleCheckAfter && rd.cn.peerClosed()
}

// monoBase anchors monoNow.
var monoBase = time.Now()

// monoNow is the monotonic clock's nanoseconds since monoBase: an idle
// time a step of the wall clock cannot stretch or shrink.
func monoNow() int64 { return int64(time.Since(monoBase)) }

func (rd *batchReader) run(b *Batcher) {
	defer close(rd.done)
	var err error
	for sent := range rd.fifo {
		if err == nil {
			rd.cn.nc.SetReadDeadline(time.Now().Add(b.timeout))
		}
		for _, c := range sent.calls {
			res := inventory.Result{Lines: c.res.Lines[:0]}
			if err == nil {
				var rerr error
				if c.ping {
					rerr = rd.cn.readPong()
				} else {
					rerr = rd.cn.readResult(&c.op, &res)
				}
				var se *ServerError
				if errors.As(rerr, &se) {
					// A whole error reply (-UNAVAILABLE, -UNKNOWN): the
					// stream is in step, and it is this call's outcome
					// alone. The calls after it were answered on their
					// own, and may have been applied: giving them this
					// refusal would tell their callers "not applied".
					c.res, c.err = res, fmt.Errorf("client: %s: %w", b.client.cfg.Addr, rerr)
					c.done <- struct{}{}
					if refusesConnection(se.Msg) {
						// The server closes the connection after it and
						// reads nothing more: the calls after it are
						// refused too, and the next pipeline must go on
						// a new connection, not into this one.
						err = fmt.Errorf("client: %s: not read: the server refused the connection (%s): %w", b.client.cfg.Addr, se.Msg, ErrUnavailable)
						rd.dead.Store(true)
						rd.cn.nc.Close()
					}
					continue
				}
				if rerr != nil {
					err = fmt.Errorf("client: %s: %w", b.client.cfg.Addr, rerr)
					rd.dead.Store(true)
					rd.cn.nc.Close() // unblocks the writer too
				}
			}
			c.res, c.err = res, err
			c.done <- struct{}{}
		}
		rd.idleAt.Store(monoNow())
		rd.inFlight.Add(-1)
		<-b.slots
	}
}

// loop is the writer: it takes what has queued, when fewer than
// pipelinesInFlight pipelines are on the wire, and sends it as one.
func (b *Batcher) loop() {
	var rd *batchReader
	drop := func() {
		if rd != nil {
			close(rd.fifo)
			<-rd.done
			rd.cn.broken = errors.New("client: batcher connection lost")
			rd.cn.Close()
			rd = nil
		}
	}
	defer drop()
	var out []byte
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
		b.mu.Unlock()
		b.slots <- struct{}{} // at most pipelinesInFlight on the wire
		// Callers answered by the last pipeline are runnable and about to
		// queue their next ops; yielding once lets them, so that the next
		// pipeline carries them all instead of the first one alone.
		runtime.Gosched()
		b.mu.Lock()
		n := min(len(b.queue), BatchSizeMax)
		if n == 0 { // the queued callers' contexts ended meanwhile (unqueue)
			b.mu.Unlock()
			<-b.slots
			continue
		}
		calls := append([]*batchCall(nil), b.queue[:n]...)
		b.queue = append(b.queue[:0], b.queue[n:]...)
		if b.room != nil {
			close(b.room) // callers waiting for room
			b.room = nil
		}
		b.mu.Unlock()

		if rd != nil && (rd.dead.Load() || rd.idleClosed()) {
			drop()
		}
		var err error
		if rd == nil {
			ctx, cancel := context.WithTimeout(context.Background(), b.timeout)
			var cn *Conn
			cn, err = b.client.Conn(ctx)
			cancel()
			if err == nil {
				// A pooled connection keeps the watch of its last user's
				// context (see Conn.watch). The batcher writes and reads
				// the socket itself: that context's end would set a past
				// deadline on it and fail the pipelines on the wire.
				cn.unwatch()
				rd = &batchReader{cn: cn, fifo: make(chan sentBatch, pipelinesInFlight), done: make(chan struct{})}
				rd.idleAt.Store(monoNow())
				go rd.run(b)
			}
		}
		if err == nil {
			out = out[:0]
			for _, c := range calls {
				if c.ping {
					out = append(out, pingCommand...)
				} else {
					out = appendOp(out, &c.op)
				}
			}
			rd.cn.nc.SetWriteDeadline(time.Now().Add(b.timeout))
			if n, werr := rd.cn.nc.Write(out); werr != nil {
				err = fmt.Errorf("client: %s: %w", b.client.cfg.Addr, werr)
				if n == 0 { // no byte of the pipeline left: not sent (Conn.flush)
					err = fmt.Errorf("client: %s: %w (%w)", b.client.cfg.Addr, werr, ErrNotSent)
				}
				rd.dead.Store(true)
				// Only the write half: the reader may still be reading
				// the replies to pipelines before this one, the server's
				// refusal of the connection among them, which closing
				// the socket would discard (their callers would be told
				// "maybe applied" of requests the server never read).
				// drop closes the rest once the reader is done.
				if tc, ok := rd.cn.nc.(interface{ CloseWrite() error }); ok {
					tc.CloseWrite()
				} else {
					rd.cn.nc.Close()
				}
			}
		}
		if err != nil {
			for _, c := range calls {
				c.res, c.err = inventory.Result{Lines: c.res.Lines[:0]}, err
				c.done <- struct{}{}
			}
			<-b.slots
			continue
		}
		rd.inFlight.Add(1)
		rd.fifo <- sentBatch{calls: calls}
	}
}
