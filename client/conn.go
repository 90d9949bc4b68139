package client

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"allot/inventory"
)

// internEntriesMax bounds a connection's table of warehouse ids, so that
// capture replies naming the same warehouses do not allocate a string each.
const internEntriesMax = 4096

// Conn is one connection to the server. It is used by one goroutine.
//
// A request (or a whole pipeline) is encoded into one buffer and sent with
// one write; replies are parsed straight from the read buffer without
// copying, except warehouse ids, which are interned.
type Conn struct {
	client *Client
	inUse  bool // between Client.Conn and Close
	nc     net.Conn
	rd     *bufio.Reader
	out    []byte
	// searchText and searchSpans are Search's buffers, kept between calls.
	searchText  []byte
	searchSpans []int
	intern      map[string]string

	deadline bool  // a deadline is set on nc
	broken   error // the connection is out of step; never reuse it
	// primary: the node said it is the primary (SaysPrimary).
	primary bool
	idleAt  time.Time // when it went back to the pool

	// The context whose cancellation interrupts I/O (see watch).
	watched     context.Context
	stopWatch   func() bool
	watchMu     sync.Mutex
	watchGen    uint64 // guarded by watchMu
	interrupted bool   // the watched context set a past deadline; guarded by watchMu
}

func dial(ctx context.Context, c *Client) (*Conn, error) {
	dctx, cancel := context.WithTimeout(ctx, c.cfg.DialTimeout)
	defer cancel()
	var d net.Dialer
	nc, err := d.DialContext(dctx, "tcp", c.cfg.Addr)
	if err != nil {
		if ctxErr := ContextEnded(ctx); ctxErr != nil {
			return nil, fmt.Errorf("%w to %s: %w", ErrConnect, c.cfg.Addr, ctxErr) // never sent
		}
		return nil, fmt.Errorf("%w to %s: %v", ErrConnect, c.cfg.Addr, err)
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	cn := &Conn{
		client: c,
		nc:     nc,
		rd:     bufio.NewReaderSize(nc, c.cfg.ReadBufferBytes),
		intern: make(map[string]string),
	}
	if c.cfg.Password != "" {
		if err := cn.auth(dctx, c.cfg.Password); err != nil {
			nc.Close()
			var se *ServerError
			if errors.As(err, &se) {
				return nil, err
			}
			return nil, fmt.Errorf("%w to %s: %v", ErrConnect, c.cfg.Addr, err)
		}
	}
	return cn, nil
}

// Close gives the connection back to its pool (or closes it if it broke).
func (cn *Conn) Close() error {
	if !cn.inUse {
		return nil
	}
	cn.inUse = false
	cn.client.put(cn)
	return nil
}

// peerClosed reports whether the server has closed an idle connection (it
// restarted, or a node of a cluster started a new term), or sent bytes no
// request asked for: either way the connection must not carry a request,
// whose outcome would then be unknown although the server never read it.
// It peeks at the socket without blocking and without consuming.
func (cn *Conn) peerClosed() bool {
	if cn.rd.Buffered() > 0 {
		return true
	}
	sc, ok := cn.nc.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return true
	}
	closed := false
	var b [1]byte
	// Control, not Read: the peek never blocks (MSG_DONTWAIT), and a read
	// deadline the last request left on the connection, past by now, must
	// not make a healthy connection look broken.
	err = rc.Control(func(fd uintptr) {
		_, _, rerr := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		// EAGAIN: nothing to read, open and quiet, as an idle connection
		// is. Anything else is an error (a reset), the end of the stream
		// (n == 0), or bytes nobody asked for (n > 0).
		closed = rerr != syscall.EAGAIN && rerr != syscall.EINTR
	})
	return closed || err != nil
}

// Err returns why the connection broke, or nil.
func (cn *Conn) Err() error { return cn.broken }

// begin prepares a round trip: it refuses a broken connection, applies
// ctx's deadline, and makes ctx's cancellation interrupt the I/O. A ctx
// that ended (its deadline passed, even before ctx.Err() says so) sends
// nothing: ErrNotSent, and the connection stays usable.
//
// The deadline is set under watchMu, after the watch is registered: a
// cancellation that fires later sets its past deadline after this one,
// and one that fired since the check (interrupted) is seen here. Setting
// it without the lock let a cancellation between the check and the
// SetDeadline be overwritten by the caller's deadline, and the request
// then waited for its reply until that deadline.
func (cn *Conn) begin(ctx context.Context) error {
	if cn.broken != nil {
		return cn.broken
	}
	if !cn.inUse {
		return errors.New("client: connection used after Close")
	}
	if err := ContextEnded(ctx); err != nil {
		return notSent("client", err)
	}
	cn.watch(ctx)
	cn.watchMu.Lock()
	defer cn.watchMu.Unlock()
	if cn.interrupted { // ctx ended since the check; its past deadline stays
		return notSent("client", ctx.Err())
	}
	if dl, ok := ctx.Deadline(); ok {
		cn.nc.SetDeadline(dl)
		cn.deadline = true
	} else if cn.deadline {
		cn.nc.SetDeadline(time.Time{})
		cn.deadline = false
	}
	return nil
}

// watch arranges for ctx's cancellation to interrupt the connection's I/O.
// A caller passes the same context call after call (a worker's run), so
// the registration is kept until the context changes: registering one per
// call cost a few percent of a client's CPU at one op per round trip.
func (cn *Conn) watch(ctx context.Context) {
	if ctx == cn.watched {
		return
	}
	cn.unwatch()
	if ctx.Done() == nil {
		return
	}
	cn.watchMu.Lock()
	cn.watchGen++
	gen := cn.watchGen
	cn.watchMu.Unlock()
	cn.watched = ctx
	cn.stopWatch = context.AfterFunc(ctx, func() {
		cn.watchMu.Lock()
		defer cn.watchMu.Unlock()
		if cn.watchGen == gen {
			cn.nc.SetDeadline(time.Unix(1, 0))
			cn.interrupted = true
		}
	})
}

// unwatch drops the registration of watch. If the watched context fired
// (while the connection was idle), the deadline it set is cleared by the
// next begin.
func (cn *Conn) unwatch() {
	if cn.stopWatch == nil {
		return
	}
	cn.stopWatch()
	cn.watchMu.Lock()
	cn.watchGen++ // a callback already running does nothing now
	if cn.interrupted {
		cn.interrupted = false
		cn.deadline = true
	}
	cn.watchMu.Unlock()
	cn.stopWatch, cn.watched = nil, nil
}

// fail marks the connection broken with err (or ctx's error, when the
// context ended and caused it) and returns that error.
func (cn *Conn) fail(ctx context.Context, err error) error {
	if ctxErr := ContextEnded(ctx); ctxErr != nil {
		if errors.Is(err, ErrNotSent) { // a write that sent nothing (flush)
			err = fmt.Errorf("client: %w (%w)", ctxErr, err)
		} else {
			err = fmt.Errorf("client: %w (%v)", ctxErr, err)
		}
	} else if _, ok := err.(*protocolError); !ok {
		err = fmt.Errorf("client: %s: %w", cn.client.cfg.Addr, err)
	}
	cn.broken = err
	return err
}

// ContextEnded returns ctx's error, or context.DeadlineExceeded once
// ctx's deadline has passed: sockets and dials carry ctx's deadline and
// can fail at it before ctx's own timer has run, while ctx.Err() is still
// nil. A failure then is the caller's deadline, not the server's.
func ContextEnded(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
		return context.DeadlineExceeded
	}
	return nil
}

// flush writes the request. A write that failed before the kernel took
// any byte of it (the connection was reset, or the caller's context
// ended since begin and its watch set a past deadline) sent nothing: its
// error is ErrNotSent too. Any byte gone, the server may read the
// request: a plain error, the outcome unknown.
func (cn *Conn) flush() error {
	n, err := cn.nc.Write(cn.out)
	if err != nil && n == 0 {
		return fmt.Errorf("%w (%w)", err, ErrNotSent)
	}
	return err
}

// Do runs one op. lines is the buffer for a capture's allocation.
func (cn *Conn) Do(ctx context.Context, op inventory.Op, lines []inventory.Line) (inventory.Result, error) {
	if err := cn.begin(ctx); err != nil {
		return inventory.Result{}, err
	}
	cn.out = appendOp(cn.out[:0], &op)
	if err := cn.flush(); err != nil {
		return inventory.Result{}, cn.fail(ctx, err)
	}
	res := inventory.Result{Lines: lines[:0]}
	if err := cn.readResult(&op, &res); err != nil {
		return inventory.Result{}, cn.fail(ctx, err)
	}
	return res, nil
}

// Capture takes n units of group g.
func (cn *Conn) Capture(ctx context.Context, g inventory.GroupKey, n int64, lines []inventory.Line) (inventory.Result, error) {
	return cn.Do(ctx, inventory.Capture(g, n), lines)
}

// Release adds n units back to row k.
func (cn *Conn) Release(ctx context.Context, k inventory.RowKey, n int64) (inventory.Result, error) {
	return cn.Do(ctx, inventory.Release(k, n), nil)
}

// Stock sets row k's count and price.
func (cn *Conn) Stock(ctx context.Context, k inventory.RowKey, count, price int64) (inventory.Result, error) {
	return cn.Do(ctx, inventory.Stock(k, count, price), nil)
}

// Get reads row k.
func (cn *Conn) Get(ctx context.Context, k inventory.RowKey) (inventory.Result, error) {
	return cn.Do(ctx, inventory.Get(k), nil)
}

// Available reads group g's total into Result.Count.
func (cn *Conn) Available(ctx context.Context, g inventory.GroupKey) (inventory.Result, error) {
	return cn.Do(ctx, inventory.Available(g), nil)
}

// Pipeline sends every op in one write, then reads the replies in order
// into results (len(results) must be at least len(ops)). A capture's lines
// go into results[i].Lines, reusing its capacity, so a caller that keeps
// results between calls does not allocate. On an error the connection is
// discarded and the outcome of every op is unknown, but where the error
// says otherwise: ErrNotSent (the write sent nothing), a refusal of the
// connection as the first reply (ErrUnavailable: the server read none of
// them).
func (cn *Conn) Pipeline(ctx context.Context, ops []inventory.Op, results []inventory.Result) error {
	if len(results) < len(ops) {
		return fmt.Errorf("client: %d results for %d ops", len(results), len(ops))
	}
	if err := cn.begin(ctx); err != nil {
		return err
	}
	cn.out = cn.out[:0]
	for i := range ops {
		cn.out = appendOp(cn.out, &ops[i])
	}
	if err := cn.flush(); err != nil {
		return cn.fail(ctx, err)
	}
	for i := range ops {
		r := &results[i]
		*r = inventory.Result{Lines: r.Lines[:0]}
		if err := cn.readResult(&ops[i], r); err != nil {
			// A refusal of the connection as the first reply is the
			// whole pipeline's: the server closed the connection having
			// read none of its ops (CatalogSetPipeline's rule).
			var se *ServerError
			if errors.As(err, &se) && len(ops) > 1 && !(i == 0 && refusesConnection(se.Msg)) {
				// One op's refusal is not the pipeline's: the ops before it
				// were applied, those after it may be. Its class (and a
				// "primary at" to follow) would have a caller send them
				// all again.
				err = &PipelineRefusal{Op: i + 1, Ops: len(ops), Refusal: se}
			}
			return cn.fail(ctx, err)
		}
	}
	return nil
}

// PipelineRefusal is the server's refusal of one op of a pipeline of
// several (Conn.Pipeline): the ops before it were applied and those after
// it may have been, so its class is ErrOutcomeUnknown whatever the
// refusal's own, and PrimaryOf does not see through it (a caller would
// send them all again). PrimaryNamed does: where the next request goes.
type PipelineRefusal struct {
	Op, Ops int          // the op refused (from 1), of Ops
	Refusal *ServerError // its reply
}

func (e *PipelineRefusal) Error() string {
	return fmt.Sprintf("client: op %d of a pipeline of %d: %v: %v", e.Op, e.Ops, e.Refusal, ErrOutcomeUnknown)
}

// Unwrap returns ErrOutcomeUnknown.
func (e *PipelineRefusal) Unwrap() error { return ErrOutcomeUnknown }

// Ping sends PING and expects PONG.
func (cn *Conn) Ping(ctx context.Context) error {
	if err := cn.begin(ctx); err != nil {
		return err
	}
	cn.out = append(cn.out[:0], pingCommand...)
	if err := cn.flush(); err != nil {
		return cn.fail(ctx, err)
	}
	if err := cn.readPong(); err != nil {
		return cn.fail(ctx, err)
	}
	return nil
}

// pingCommand is PING as a RESP array.
const pingCommand = "*1\r\n$4\r\nPING\r\n"

// readPong reads one reply and expects +PONG; an error reply is a
// *ServerError of its class (a refusal of the connection is one).
func (cn *Conn) readPong() error {
	line, err := cn.line()
	if err != nil {
		return err
	}
	if len(line) > 0 && line[0] == '-' {
		return replyError(string(line[1:]))
	}
	if string(line) != "+PONG" {
		return unexpected("PING", line)
	}
	return nil
}

// PingPipeline sends n PINGs in one write and reads the n PONGs: the
// network path without the engine, which pipelined ops are compared with.
func (cn *Conn) PingPipeline(ctx context.Context, n int) error {
	if err := cn.begin(ctx); err != nil {
		return err
	}
	cn.out = cn.out[:0]
	for range n {
		cn.out = append(cn.out, "*1\r\n$4\r\nPING\r\n"...)
	}
	if err := cn.flush(); err != nil {
		return cn.fail(ctx, err)
	}
	for i := range n {
		line, err := cn.line()
		if err != nil {
			return cn.fail(ctx, err)
		}
		if i == 0 && len(line) > 0 && line[0] == '-' {
			// A refusal of the connection (readPong): of its class,
			// and the server closed the connection after it.
			return cn.fail(ctx, replyError(string(line[1:])))
		}
		if string(line) != "+PONG" {
			return cn.fail(ctx, unexpected("PING", line))
		}
	}
	return nil
}

func (cn *Conn) auth(ctx context.Context, password string) error {
	if dl, ok := ctx.Deadline(); ok {
		cn.nc.SetDeadline(dl)
		defer cn.nc.SetDeadline(time.Time{})
	}
	cn.out = appendCommand(cn.out[:0], "AUTH", password)
	if err := cn.flush(); err != nil {
		return fmt.Errorf("client: %s: AUTH: %w", cn.client.cfg.Addr, err)
	}
	line, err := cn.line()
	if err != nil {
		return fmt.Errorf("client: %s: AUTH: %w", cn.client.cfg.Addr, err)
	}
	if len(line) > 0 && line[0] == '-' {
		// Of its class: "max number of clients" is a refusal, WRONGPASS
		// of none.
		return replyError(string(line[1:]))
	}
	if string(line) != "+OK" {
		return unexpected("AUTH", line)
	}
	return nil
}

// Hello sends HELLO 2 and returns the server's fields as strings.
// SaysPrimary reports whether cn's node is a primary (HELLO's role
// "master"), with the role it gave: asked the first time, and a yes kept
// for the connection's life (a node keeps its role for as long as a
// connection to it lives: each term of a node, a restart or a primary
// deposed, opens a new server and closes the last term's connections; a
// primary past its lease refuses reads). A no is asked again next time.
func (cn *Conn) SaysPrimary(ctx context.Context) (bool, string, error) {
	if cn.primary {
		return true, "master", nil
	}
	info, err := cn.Hello(ctx)
	if err != nil {
		return false, "", err
	}
	cn.primary = info["role"] == "master"
	return cn.primary, info["role"], nil
}

func (cn *Conn) Hello(ctx context.Context) (map[string]string, error) {
	if err := cn.begin(ctx); err != nil {
		return nil, err
	}
	cn.out = appendCommand(cn.out[:0], "HELLO", "2")
	if err := cn.flush(); err != nil {
		return nil, cn.fail(ctx, err)
	}
	line, err := cn.line()
	if err != nil {
		return nil, cn.fail(ctx, err)
	}
	if len(line) > 0 && line[0] == '-' {
		// A refusal of the connection ("max number of clients") is one,
		// and the server closed the connection after it: it must not go
		// back to the pool for the next request to be sent into.
		se := replyError(string(line[1:]))
		if refusesConnection(se.Msg) {
			return nil, cn.fail(ctx, se)
		}
		return nil, se
	}
	n, ok := header(line, '*')
	if !ok || n%2 != 0 {
		return nil, cn.fail(ctx, unexpected("HELLO", line))
	}
	info := make(map[string]string, n/2)
	var key string
	for i := 0; i < n; i++ {
		v, err := cn.scalar()
		if err != nil {
			return nil, cn.fail(ctx, err)
		}
		if i%2 == 0 {
			key = v
		} else {
			info[key] = v
		}
	}
	return info, nil
}

// scalar reads a bulk string or an integer as a string; an array is read
// and skipped (shown as "").
func (cn *Conn) scalar() (string, error) {
	line, err := cn.line()
	if err != nil {
		return "", err
	}
	switch {
	case len(line) > 0 && line[0] == ':':
		return string(line[1:]), nil
	case len(line) > 0 && line[0] == '$':
		b, err := cn.bulk(line)
		return string(b), err
	case len(line) > 0 && line[0] == '*':
		n, ok := header(line, '*')
		if !ok {
			return "", unexpected("HELLO", line)
		}
		for range n {
			if _, err := cn.scalar(); err != nil {
				return "", err
			}
		}
		return "", nil
	}
	return "", unexpected("HELLO", line)
}

// protocolError is a reply that the contract does not allow at that point.
type protocolError struct{ msg string }

func (e *protocolError) Error() string { return e.msg }

func unexpected(cmd string, line []byte) error {
	if len(line) > 80 {
		line = line[:80]
	}
	return &protocolError{msg: fmt.Sprintf("client: unexpected reply to %s: %q", cmd, line)}
}

// line reads one reply line without its CRLF. The slice is valid until the
// next read.
func (cn *Conn) line() ([]byte, error) {
	line, err := cn.rd.ReadSlice('\n')
	if err != nil {
		if errors.Is(err, bufio.ErrBufferFull) {
			return nil, &protocolError{msg: "client: reply line longer than the read buffer"}
		}
		if errors.Is(err, io.EOF) && len(line) == 0 {
			return nil, io.ErrUnexpectedEOF
		}
		return nil, err
	}
	if len(line) < 2 || line[len(line)-2] != '\r' {
		return nil, &protocolError{msg: "client: reply line not ended by CRLF"}
	}
	return line[:len(line)-2], nil
}

// header parses "<prefix><int>".
func header(line []byte, prefix byte) (int, bool) {
	if len(line) < 2 || line[0] != prefix {
		return 0, false
	}
	v, ok := parseInt(line[1:])
	return int(v), ok && v >= -1 && v <= 1<<31
}

func parseInt(b []byte) (int64, bool) {
	neg := false
	if len(b) > 0 && b[0] == '-' {
		neg, b = true, b[1:]
	}
	if len(b) == 0 || len(b) > 19 {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + uint64(c-'0')
	}
	if v > 1<<63-1 {
		return 0, false
	}
	if neg {
		return -int64(v), true
	}
	return int64(v), true
}

// bulk reads the payload of a bulk string whose header is line. The slice
// is valid until the next read.
func (cn *Conn) bulk(line []byte) ([]byte, error) {
	n, ok := header(line, '$')
	if !ok || n < 0 {
		return nil, unexpected("bulk", line)
	}
	if n+2 <= cn.rd.Size() {
		b, err := cn.rd.Peek(n + 2)
		if err != nil {
			return nil, err
		}
		if b[n] != '\r' || b[n+1] != '\n' {
			return nil, &protocolError{msg: "client: bulk string not ended by CRLF"}
		}
		cn.rd.Discard(n + 2)
		return b[:n], nil
	}
	b := make([]byte, n+2)
	if _, err := io.ReadFull(cn.rd, b); err != nil {
		return nil, err
	}
	return b[:n], nil
}

func (cn *Conn) internBytes(b []byte) string {
	if s, ok := cn.intern[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(cn.intern) < internEntriesMax {
		cn.intern[s] = s
	}
	return s
}

func (cn *Conn) integer(cmd string) (int64, error) {
	line, err := cn.line()
	if err != nil {
		return 0, err
	}
	if len(line) < 2 || line[0] != ':' {
		return 0, unexpected(cmd, line)
	}
	v, ok := parseInt(line[1:])
	if !ok {
		return 0, unexpected(cmd, line)
	}
	return v, nil
}

// readResult reads the reply to op into r. r.Lines is the buffer for a
// capture's lines.
func (cn *Conn) readResult(op *inventory.Op, r *inventory.Result) error {
	k := op.Kind
	line, err := cn.line()
	if err != nil {
		return err
	}
	if len(line) == 0 {
		return unexpected(k.String(), line)
	}
	if line[0] == '-' {
		return errorResult(op, line[1:], r)
	}
	switch k {
	case inventory.KindHold, inventory.KindOrder, inventory.KindHoldGet, inventory.KindConfirm, inventory.KindCancel:
		return cn.readCheckout(op, line, r)
	case inventory.KindSearch:
		hits, err := cn.readSearchFrom(line, r.Hits[:0])
		if err != nil {
			return err
		}
		r.Code, r.Hits = inventory.CodeOK, hits
	case inventory.KindCapture:
		n, ok := header(line, '*')
		if !ok || n < 1 {
			return unexpected("CAPTURE", line)
		}
		lines := r.Lines[:0]
		for range n {
			l, err := cn.line()
			if err != nil {
				return err
			}
			if string(l) != "*2" {
				return unexpected("CAPTURE", l)
			}
			if l, err = cn.line(); err != nil {
				return err
			}
			w, err := cn.bulk(l)
			if err != nil {
				return err
			}
			warehouse := cn.internBytes(w)
			count, err := cn.integer("CAPTURE")
			if err != nil {
				return err
			}
			lines = append(lines, inventory.Line{Warehouse: warehouse, Count: count})
		}
		r.Code, r.Lines = inventory.CodeOK, lines
	case inventory.KindRelease, inventory.KindAvailable:
		if line[0] != ':' {
			return unexpected(k.String(), line)
		}
		v, ok := parseInt(line[1:])
		if !ok {
			return unexpected(k.String(), line)
		}
		r.Code, r.Count = inventory.CodeOK, v
	case inventory.KindStock:
		if string(line) != "+OK" {
			return unexpected("STOCK.SET", line)
		}
		r.Code = inventory.CodeOK
	case inventory.KindGet:
		if string(line) == "*-1" || string(line) == "$-1" {
			r.Code = inventory.CodeNotFound
			return nil
		}
		if string(line) != "*2" {
			return unexpected("STOCK.GET", line)
		}
		count, err := cn.integer("STOCK.GET")
		if err != nil {
			return err
		}
		price, err := cn.integer("STOCK.GET")
		if err != nil {
			return err
		}
		r.Code, r.Count, r.Price = inventory.CodeOK, count, price
	default:
		return fmt.Errorf("client: unknown op kind %v", k)
	}
	return nil
}

// errorResult maps an error reply to an op's outcome: the business error
// words of the contract are results; UNAVAILABLE and UNKNOWN are the
// errors of their outcome class; any other is an operational error.
func errorResult(op *inventory.Op, msg []byte, r *inventory.Result) error {
	k := op.Kind
	switch {
	case hasPrefix(msg, "INSUFFICIENT available ") && k == inventory.KindCapture:
		v, ok := parseInt(msg[len("INSUFFICIENT available "):])
		if !ok {
			return unexpected(k.String(), msg)
		}
		r.Code, r.Available, r.Lines = inventory.CodeInsufficient, v, r.Lines[:0]
	case hasPrefix(msg, "INSUFFICIENT ") && (k == inventory.KindHold || k == inventory.KindOrder):
		// Identifiers may hold spaces: find the line whose group the
		// message names, rather than splitting it.
		for i := range op.Lines {
			g := op.Lines[i].Group
			p := "INSUFFICIENT " + g.SKU + " " + g.Condition + " " + g.Source + " available "
			if hasPrefix(msg, p) {
				if v, ok := parseInt(msg[len(p):]); ok {
					r.Code, r.ShortLine, r.Available = inventory.CodeInsufficient, i, v
					return nil
				}
			}
		}
		return unexpected(k.String(), msg)
	case string(msg) == "NOTFOUND no such row" || hasPrefix(msg, "NOTFOUND no such hold"):
		r.Code = inventory.CodeNotFound
	case hasPrefix(msg, "EXPIRED "):
		r.Code = inventory.CodeExpired
	case hasPrefix(msg, "CANCELLED "):
		r.Code = inventory.CodeCancelled
	case hasPrefix(msg, "CONFIRMED "):
		r.Code = inventory.CodeConfirmed
	case hasPrefix(msg, "MISMATCH "):
		r.Code, r.Detail = inventory.CodeMismatch, string(msg[len("MISMATCH "):])
	case string(msg) == maxClientsReply || hasPrefix(msg, protocolErrorReply):
		return replyError(string(msg)) // a refusal; the connection breaks
	case hasPrefix(msg, "ERR "):
		r.Code, r.Detail = inventory.CodeInvalid, string(msg[len("ERR "):])
	default:
		return replyError(string(msg))
	}
	return nil
}

// Replies refusing the connection rather than the request (the server
// closes it after them): nothing was applied.
const (
	maxClientsReply    = "ERR max number of clients reached" // over the server's connection limit
	protocolErrorReply = "ERR Protocol error"                // the server could not parse the stream
)

// refusesConnection reports whether an error reply (without its '-')
// refuses the connection rather than the request: the server closes the
// connection after it.
func refusesConnection(msg string) bool {
	return msg == maxClientsReply || strings.HasPrefix(msg, protocolErrorReply)
}

// replyError is the error of an error reply that is no op outcome: of the
// class its first word names (-UNAVAILABLE, -UNKNOWN), or of none.
func replyError(msg string) *ServerError {
	switch {
	case strings.HasPrefix(msg, "UNAVAILABLE"), refusesConnection(msg):
		return &ServerError{Msg: msg, class: ErrUnavailable}
	case strings.HasPrefix(msg, "UNKNOWN"):
		return &ServerError{Msg: msg, class: ErrOutcomeUnknown}
	}
	return &ServerError{Msg: msg}
}

func hasPrefix(b []byte, p string) bool {
	return len(b) >= len(p) && string(b[:len(p)]) == p
}

// appendCommand encodes a command of string arguments.
func appendCommand(b []byte, args ...string) []byte {
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(len(args)), 10)
	b = append(b, '\r', '\n')
	for _, a := range args {
		b = appendBulk(b, a)
	}
	return b
}

func appendBulk(b []byte, s string) []byte {
	b = append(b, '$')
	b = strconv.AppendInt(b, int64(len(s)), 10)
	b = append(b, '\r', '\n')
	b = append(b, s...)
	return append(b, '\r', '\n')
}

func appendBulkInt(b []byte, v int64) []byte {
	var digits [20]byte
	d := strconv.AppendInt(digits[:0], v, 10)
	b = append(b, '$')
	b = strconv.AppendInt(b, int64(len(d)), 10)
	b = append(b, '\r', '\n')
	b = append(b, d...)
	return append(b, '\r', '\n')
}

// appendOp encodes op as its contract command without allocating (an op
// with an idempotency key gets its trailing ID <key>).
func appendOp(b []byte, op *inventory.Op) []byte {
	k := &op.Key
	id := 0
	if op.IdempotencyKey != "" {
		id = 2
	}
	switch op.Kind {
	case inventory.KindCapture:
		b = appendArrayHeader(b, 5+id)
		b = append(b, "$7\r\nCAPTURE\r\n"...)
		b = appendBulk(b, k.SKU)
		b = appendBulk(b, k.Condition)
		b = appendBulk(b, k.Source)
		b = appendBulkInt(b, op.N)
	case inventory.KindRelease:
		b = appendArrayHeader(b, 6+id)
		b = append(b, "$7\r\nRELEASE\r\n"...)
		b = appendBulk(b, k.SKU)
		b = appendBulk(b, k.Warehouse)
		b = appendBulk(b, k.Condition)
		b = appendBulk(b, k.Source)
		b = appendBulkInt(b, op.N)
	case inventory.KindStock:
		b = appendArrayHeader(b, 7+id)
		b = append(b, "$9\r\nSTOCK.SET\r\n"...)
		b = appendBulk(b, k.SKU)
		b = appendBulk(b, k.Warehouse)
		b = appendBulk(b, k.Condition)
		b = appendBulk(b, k.Source)
		b = appendBulkInt(b, op.N)
		b = appendBulkInt(b, op.Price)
	case inventory.KindGet:
		b = append(b, "*5\r\n$9\r\nSTOCK.GET\r\n"...)
		b = appendBulk(b, k.SKU)
		b = appendBulk(b, k.Warehouse)
		b = appendBulk(b, k.Condition)
		return appendBulk(b, k.Source)
	case inventory.KindAvailable:
		b = append(b, "*4\r\n$9\r\nAVAILABLE\r\n"...)
		b = appendBulk(b, k.SKU)
		b = appendBulk(b, k.Condition)
		return appendBulk(b, k.Source)
	case inventory.KindHold:
		b = appendArrayHeader(b, 3+4*len(op.Lines))
		b = append(b, "$4\r\nHOLD\r\n"...)
		b = appendBulk(b, op.Hold)
		b = appendBulkInt(b, op.TTL)
		return appendDemand(b, op.Lines)
	case inventory.KindOrder:
		b = appendArrayHeader(b, 1+4*len(op.Lines)+id)
		b = append(b, "$5\r\nORDER\r\n"...)
		b = appendDemand(b, op.Lines)
	case inventory.KindConfirm:
		b = append(b, "*2\r\n$7\r\nCONFIRM\r\n"...)
		return appendBulk(b, op.Hold)
	case inventory.KindCancel:
		b = append(b, "*2\r\n$6\r\nCANCEL\r\n"...)
		return appendBulk(b, op.Hold)
	case inventory.KindHoldGet:
		b = append(b, "*2\r\n$8\r\nHOLD.GET\r\n"...)
		return appendBulk(b, op.Hold)
	case inventory.KindSearch:
		if op.Query == nil {
			// Refused by the server with -ERR, as an unknown kind.
			return append(b, "*1\r\n$10\r\nUNKNOWN.OP\r\n"...)
		}
		return appendSearch(b, *op.Query)
	default:
		// An unknown kind gets a command the server refuses with -ERR, so
		// the reply stream stays in step.
		return append(b, "*1\r\n$10\r\nUNKNOWN.OP\r\n"...)
	}
	if id != 0 {
		b = append(b, "$2\r\nID\r\n"...)
		b = appendBulk(b, op.IdempotencyKey)
	}
	return b
}

func appendArrayHeader(b []byte, n int) []byte {
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(n), 10)
	return append(b, '\r', '\n')
}

func appendDemand(b []byte, lines []inventory.Demand) []byte {
	for i := range lines {
		l := &lines[i]
		b = appendBulk(b, l.Group.SKU)
		b = appendBulk(b, l.Group.Condition)
		b = appendBulk(b, l.Group.Source)
		b = appendBulkInt(b, l.N)
	}
	return b
}
