package client

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"allot/inventory"
)

// Config configures a Client.
type Config struct {
	// Addr is the server's RESP address, host:port.
	Addr string
	// Password is sent with AUTH on every new connection when set.
	Password string
	// PoolSize bounds the open connections (default 16). Conn waits for a
	// free one when all are in use.
	PoolSize int
	// DialTimeout bounds connecting and authenticating (default 5s).
	DialTimeout time.Duration
	// ReadBufferBytes is each connection's read buffer (default 16 KiB).
	ReadBufferBytes int
}

// Validate fills defaults and checks the fields.
func (c *Config) Validate() error {
	if c.Addr == "" {
		return errors.New("client: no server address")
	}
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		return fmt.Errorf("client: address %q: %w", c.Addr, err)
	}
	if c.PoolSize == 0 {
		c.PoolSize = 16
	}
	if c.PoolSize < 0 {
		return fmt.Errorf("client: pool size must be positive, got %d", c.PoolSize)
	}
	if c.DialTimeout == 0 {
		c.DialTimeout = 5 * time.Second
	}
	if c.ReadBufferBytes == 0 {
		c.ReadBufferBytes = 16 << 10
	}
	if c.ReadBufferBytes < 512 {
		return fmt.Errorf("client: read buffer must be at least 512 bytes, got %d", c.ReadBufferBytes)
	}
	if strings.ContainsAny(c.Password, "\r\n") {
		return errors.New("client: the password must not contain CR or LF")
	}
	return nil
}

// ErrClosed is returned by a Client used after Close. Nothing was sent:
// it is a refusal (errors.Is(err, ErrUnavailable)), so that a caller that
// took a pool another goroutine then closed (a router dropping a shard's
// pool, a redirect replacing the primary's) retries it elsewhere.
var ErrClosed = fmt.Errorf("client: closed (%w)", ErrUnavailable)

// ErrConnect wraps the error of a connection that could not be opened: the
// server is not there (or did not answer AUTH in time).
var ErrConnect = errors.New("client: cannot connect")

// ServerError is an error reply outside the op outcomes of the contract:
// the server refused the client (NOAUTH, WRONGPASS, max number of clients)
// or the request (an -ERR to a non-op command).
type ServerError struct {
	Msg   string // the reply without its leading '-'
	class error  // ErrUnavailable or ErrOutcomeUnknown for those replies
}

func (e *ServerError) Error() string { return "client: server said: " + e.Msg }

// Unwrap returns the outcome class of an -UNAVAILABLE or -UNKNOWN reply.
func (e *ServerError) Unwrap() error { return e.class }

// Outcome classes (DESIGN.md "Outcome classes"), matched with errors.Is:
var (
	// ErrUnavailable: the server refused the request without applying it
	// (-UNAVAILABLE): retrying, here or elsewhere, is safe.
	ErrUnavailable = errors.New("client: unavailable (not applied)")
	// ErrOutcomeUnknown: the request may or may not have been applied
	// (-UNKNOWN; and, from Client.Do and the methods built on it, a
	// mutation whose connection broke after it was sent): retry only with the
	// same idempotency key. Conn, Pipeline and Batcher calls return a
	// broken connection's error as it is, of no class: MaybeApplied is
	// the test that covers both.
	ErrOutcomeUnknown = errors.New("client: outcome unknown")
	// ErrNotSent: the request never left the client, so nothing was
	// applied: the caller's context ended before it was written (while
	// it waited for a pooled connection, in a Batcher's queue, or with
	// its deadline already past), the Batcher was closed
	// (ErrBatcherClosed), or its write failed before any byte of it left
	// (the connection was reset). The cause stays visible: errors.Is(err,
	// context.DeadlineExceeded) or context.Canceled holds as well.
	// MaybeApplied is false for it, as for ErrConnect and ErrClosed.
	ErrNotSent = errors.New("client: not sent")
)

// notSent is the error of a request never sent because of cause (the
// caller's context's error, usually).
func notSent(what string, cause error) error {
	return fmt.Errorf("%s: %w (%w)", what, cause, ErrNotSent)
}

// Client is a pool of connections to one server.
type Client struct {
	cfg   Config
	slots chan struct{} // one token per connection that may be open
	idle  chan *Conn

	mu      sync.Mutex
	closed  bool
	primary *Client // the pool a "not primary" refusal sent mutations to (redirect.go); guarded by mu
}

// New returns a client. It does not connect: the first Conn does. Use
// Ping to check that the server answers.
func New(cfg Config) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Client{
		cfg:   cfg,
		slots: make(chan struct{}, cfg.PoolSize),
		idle:  make(chan *Conn, cfg.PoolSize),
	}, nil
}

// Conn takes a connection from the pool, dialing one if none is idle, and
// waits while PoolSize connections are in use. Close gives it back. A ctx
// that ends first (or had) gets its error with ErrNotSent.
func (c *Client) Conn(ctx context.Context) (*Conn, error) {
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	if err := ContextEnded(ctx); err != nil {
		return nil, notSent("client", err)
	}
	// An idle connection before a new one. One the server closed while it
	// sat in the pool is dropped (its slot freed) and the next tried.
	for {
		var cn *Conn
		select {
		case cn = <-c.idle:
		default:
			select {
			case cn = <-c.idle:
			case c.slots <- struct{}{}:
			case <-ctx.Done():
				return nil, notSent("client: waiting for a free connection", ctx.Err())
			}
		}
		if cn == nil {
			break // a slot for a new connection
		}
		if cn = c.reuse(cn); cn != nil {
			return cn, nil
		}
	}
	cn, err := dial(ctx, c)
	if err != nil {
		<-c.slots
		return nil, err
	}
	cn.inUse = true
	return cn, nil
}

// idleCheckAfter is how long a connection must have sat in the pool for
// Conn to check that the server did not close it meanwhile: a restart
// takes longer than this, and a connection handed from one request
// straight to the next (a busy pool) is spared the system call.
const idleCheckAfter = time.Millisecond

// reuse readies an idle connection for use, or closes it and returns nil
// when the server closed it while it sat in the pool.
func (c *Client) reuse(cn *Conn) *Conn {
	if time.Since(cn.idleAt) >= idleCheckAfter && cn.peerClosed() {
		cn.unwatch()
		cn.nc.Close()
		<-c.slots
		return nil
	}
	cn.inUse = true
	return cn
}

// put returns a healthy connection to the pool, or closes a broken one.
func (c *Client) put(cn *Conn) {
	// Under mu, as Close sets closed: a connection given back after Close
	// drained the idle ones was kept open for ever.
	c.mu.Lock()
	if cn.broken == nil && !c.closed {
		cn.idleAt = time.Now()
		select {
		case c.idle <- cn:
			c.mu.Unlock()
			return
		default:
			// Cannot happen: idle holds at most PoolSize and each has a slot.
		}
	}
	c.mu.Unlock()
	cn.unwatch()
	cn.nc.Close()
	<-c.slots
}

// Close closes the idle connections; connections in use are closed when
// given back.
func (c *Client) Close() error {
	c.mu.Lock()
	c.closed = true
	if c.primary != nil {
		c.primary.Close()
	}
	c.mu.Unlock()
	for {
		select {
		case cn := <-c.idle:
			cn.unwatch()
			cn.nc.Close()
			<-c.slots
		default:
			return nil
		}
	}
}

// with runs fn on a pooled connection.
func (c *Client) with(ctx context.Context, fn func(*Conn) error) error {
	cn, err := c.Conn(ctx)
	if err != nil {
		return err
	}
	err = fn(cn)
	cn.Close()
	return err
}

// Addr returns the server address the client connects to.
func (c *Client) Addr() string { return c.cfg.Addr }

// Do runs one op on a pooled connection. lines is the buffer for a
// capture's allocation.
//
// Retries: a request the server refused (-UNAVAILABLE: never applied) is
// retried up to RetriesMax times with a growing pause; one whose outcome is
// unknown (-UNKNOWN, or a connection lost after it was sent) is retried the
// same way only when repeating it cannot apply it twice: it carries an
// idempotency key, or it is a hold, confirm or cancel (idempotent by their
// hold id), or a read (get, available, hold-get, search). Anything else is
// returned to the caller. Do and the Client methods built on it are the
// only ones that retry or follow a redirect (see the package doc).
//
// A mutation refused by a standby of a cluster ("UNAVAILABLE not primary,
// primary at ADDR") is sent to ADDR (see redirect.go). While a failover
// is under way the node named may refuse it too, naming another (or
// itself): each further refusal is followed after a growing pause, up to
// RetriesMax of them, so that callers wait out the election instead of
// spinning through refusals (NextPrimary).
//
// Once an attempt at a mutation may have been applied (its outcome is
// unknown), the call's error is an unknown outcome whatever the later
// attempts met: a retry refused (the primary died with the first one)
// must not tell the caller "not applied".
func (c *Client) Do(ctx context.Context, op inventory.Op, lines []inventory.Line) (res inventory.Result, err error) {
	var lost error // the first attempt whose outcome is unknown
	res, err = c.do(ctx, op, lines, &lost)
	target := c
	for hop := 0; op.Kind.Mutates(); hop++ {
		addr, ok := NextPrimary(ctx, err, hop, target.cfg.Addr)
		if !ok {
			break
		}
		target = c
		if addr != c.cfg.Addr {
			pc, perr := c.primaryClient(addr)
			if perr != nil {
				// The refusal stands (nothing was applied); the address
				// it named could not be followed.
				return res, stillUnknown(fmt.Errorf("%w (cannot follow it: %v)", err, perr), lost)
			}
			target = pc
		}
		res, err = target.do(ctx, op, lines, &lost)
		if errors.Is(err, ErrClosed) && target != c {
			// Another goroutine's redirect closed the pool followed here
			// (nothing was sent): go where c sends mutations now.
			target = c.redirected()
			res, err = target.do(ctx, op, lines, &lost)
		}
	}
	return res, stillUnknown(err, lost)
}

// stillUnknown returns err, an unknown outcome when an earlier attempt's
// (lost) was.
func stillUnknown(err, lost error) error {
	if err == nil || lost == nil || errors.Is(err, ErrOutcomeUnknown) {
		return err
	}
	return fmt.Errorf("%v (an earlier attempt's outcome is unknown: %v): %w", err, lost, ErrOutcomeUnknown)
}

// MaybeApplied reports whether err, from sending a mutation, leaves its
// outcome unknown: -UNKNOWN, or a connection lost once the request may
// have left; not a refusal, a connection never made, a request never
// sent (ErrNotSent: the caller's context ended first, or the write sent
// no byte of it), or a reply.
func MaybeApplied(err error) bool {
	if err == nil || errors.Is(err, ErrUnavailable) || errors.Is(err, ErrConnect) || errors.Is(err, ErrClosed) {
		return false
	}
	if errors.Is(err, ErrOutcomeUnknown) {
		return true // an earlier attempt's, though this one was not sent
	}
	var se *ServerError
	return !errors.Is(err, ErrNotSent) && !errors.As(err, &se)
}

// WaitRetry waits the pause before retry attempt+1 (RetryPause longer
// each time); it reports false when ctx ended first.
func WaitRetry(ctx context.Context, attempt int) bool {
	t := time.NewTimer(time.Duration(attempt+1) * RetryPause)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func (c *Client) do(ctx context.Context, op inventory.Op, lines []inventory.Line, lost *error) (res inventory.Result, err error) {
	for attempt := 0; ; attempt++ {
		err = c.with(ctx, func(cn *Conn) error {
			res, err = cn.Do(ctx, op, lines)
			return err
		})
		if *lost == nil && op.Kind.Mutates() && MaybeApplied(err) {
			*lost = err
		}
		if _, redirect := PrimaryOf(err); redirect && op.Kind.Mutates() {
			return res, err
		}
		if err == nil || attempt >= RetriesMax || ContextEnded(ctx) != nil || !Retryable(&op, err) || errors.Is(err, ErrClosed) {
			return res, err
		}
		if !WaitRetry(ctx, attempt) {
			return res, err
		}
	}
}

// Retry bounds of Client.Do.
const (
	RetriesMax = 3
	RetryPause = 20 * time.Millisecond
)

// Retryable reports whether op may be sent again after err: a refusal, a
// request never sent, or an unknown outcome of an op that repeating
// cannot apply twice (a key, a hold id, a read). Client.Do's rule, and
// the cluster router's.
func Retryable(op *inventory.Op, err error) bool {
	if errors.Is(err, ErrUnavailable) {
		return true
	}
	if errors.Is(err, ErrConnect) || errors.Is(err, ErrNotSent) {
		return true // never sent
	}
	var se *ServerError
	unknown := errors.Is(err, ErrOutcomeUnknown) || !errors.As(err, &se)
	if !unknown {
		return false
	}
	switch op.Kind {
	case inventory.KindHold, inventory.KindConfirm, inventory.KindCancel,
		inventory.KindGet, inventory.KindAvailable, inventory.KindHoldGet, inventory.KindSearch,
		inventory.KindCatalogGet:
		return true // idempotent by their hold id, or reads
	}
	return op.IdempotencyKey != ""
}

// Capture takes n units of group g.
func (c *Client) Capture(ctx context.Context, g inventory.GroupKey, n int64, lines []inventory.Line) (inventory.Result, error) {
	return c.Do(ctx, inventory.Capture(g, n), lines)
}

// Release adds n units back to row k.
func (c *Client) Release(ctx context.Context, k inventory.RowKey, n int64) (inventory.Result, error) {
	return c.Do(ctx, inventory.Release(k, n), nil)
}

// Stock sets row k's count and price.
func (c *Client) Stock(ctx context.Context, k inventory.RowKey, count, price int64) (inventory.Result, error) {
	return c.Do(ctx, inventory.Stock(k, count, price), nil)
}

// Get reads row k: CodeOK with Count and Price, or CodeNotFound.
func (c *Client) Get(ctx context.Context, k inventory.RowKey) (inventory.Result, error) {
	return c.Do(ctx, inventory.Get(k), nil)
}

// Available reads group g's total into Result.Count.
func (c *Client) Available(ctx context.Context, g inventory.GroupKey) (inventory.Result, error) {
	return c.Do(ctx, inventory.Available(g), nil)
}

// Pipeline sends ops on one pooled connection in one write and reads their
// replies; see Conn.Pipeline. One attempt: not retried, not redirected.
func (c *Client) Pipeline(ctx context.Context, ops []inventory.Op, results []inventory.Result) error {
	return c.with(ctx, func(cn *Conn) error { return cn.Pipeline(ctx, ops, results) })
}

// Ping checks that the server answers.
func (c *Client) Ping(ctx context.Context) error {
	return c.with(ctx, func(cn *Conn) error { return cn.Ping(ctx) })
}

// Hello returns the server's HELLO 2 fields (server, version, proto, id,
// mode, role, durability).
func (c *Client) Hello(ctx context.Context) (info map[string]string, err error) {
	err = c.with(ctx, func(cn *Conn) error {
		info, err = cn.Hello(ctx)
		return err
	})
	return info, err
}
