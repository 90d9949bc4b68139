package server

import (
	"crypto/subtle"
	"errors"
	"net"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"allot/catalog"
	"allot/engine"
	"allot/inventory"
	"allot/server/resp"
)

// respConn serves one RESP connection.
//
// It works in rounds: decode every complete command in the read buffer (up
// to PipelineDepthMax), submit each op to the engine in order, then wait for
// them in order and write the replies, with one write unless they pass
// replyBufferBytesFlush (then one write per part). So a pipeline of
// many commands costs the engine one queue pass, and the engine's writer
// puts ops of many connections into one journal write and one fdatasync.
// Waiting for each op before decoding the next (what a handler-per-command
// server does) would cost one durability wait per command instead.
//
// Replies that need no engine (PING, errors, ...) are encoded at decode time
// into a side buffer and copied out in order, so the reply order is the
// command order whatever mix a pipeline holds.
//
// The read buffer starts small and doubles while reads fill it, up to
// inMax; the decoder guarantees that an incomplete command never holds more
// than RequestBytesMax bytes, so a full buffer always holds a complete
// command or the start of one that fits.
//
// What a connection holds is bounded whatever its client sends:
//   - a round's replies are written out each time their encoding passes
//     replyBufferBytesFlush, not assembled whole first (a pipeline of
//     1,024 searches of 1,000 hits once made a reply of half a GB), and a
//     round takes no more commands once its immediate replies pass that
//     bound, or its searches may walk roundSearchStepsMax index entries,
//     their offsets and limits (its requests hold their results until
//     their replies are encoded: 57 MB for 1,024 of LIMIT 1000; and the
//     engine runs a round's searches under one hold of its lock, so 1,024
//     of OFFSET 100000 held every other client's op for seconds);
//   - a write waits for a client at most writeTimeout, then the
//     connection is closed: one that never reads holds a part of a round's
//     replies for that long, not for ever;
//   - between rounds it keeps at most requestsKeepMax requests, none
//     lending buffers beyond their defaults or pointing at search hits,
//     and at most readBufferBytesKeepMax of read buffer; a deeper round
//     borrows requests and a read buffer from pools shared by every
//     connection (requestPool, readBuffers), which the garbage collector
//     empties when no round needs them. Keeping its largest round's
//     requests and buffer, as it once did, left an idle connection
//     holding about 1 MB after a pipeline of 1,024 captures and 28 MB
//     after one of searches; dropping them instead of pooling them costs
//     the deepest pipelines several allocations per command.
type respConn struct {
	s   *Server
	nc  net.Conn // a goroutine's connection (Config.RESPIO "goroutine"); nil on the loop
	id  int64
	dec *resp.Decoder

	// On the event loop (Config.RESPIO "loop", resp_loop_linux.go): the
	// socket, non-blocking, closed only by closeFD; and what the
	// round handed to a goroutine left to do.
	loop        *respLoop
	fd          int
	onLoop      bool // the loop serves the socket (not parked, not handed to a goroutine)
	inEpoll     bool // the socket is in the loop's epoll set (onLoop, or parked: respLoop.park)
	changesNext bool // a CHANGES command is next in the buffer: it runs on a goroutine
	parked      bool // the round waits for notifyReq's release; the loop does not serve it
	notifyReq   *engine.Request
	notifySlot  int
	loopNotify  func(*engine.Request)
	rest        []byte // the round's replies the socket did not take at once
	readyAt     instant

	in         []byte
	start, end int
	inMax      int
	readErr    error

	// Stage times of the current round (see stage.go): when its bytes were
	// read, when its first op went to the engine, when the last one had
	// been handed over; and when the previous round's replies were written.
	readAt, submitAt, submittedAt, wroteAt instant
	traced                                 *engine.Request // the round's first engine request

	out       []byte
	immediate []byte
	slots     []slot
	// encoded is how many of the round's slots have their reply encoded
	// (and written, or in c.out); more says that decode stopped at the
	// round's bound, with commands maybe left in the buffer; steps is the
	// index entries the round's searches may walk (their offsets and
	// limits), which bounds the hits they may hold too.
	encoded int
	more    bool
	steps   int
	free    []*engine.Request
	// pending are the round's decoded ops not yet submitted, and their
	// slots: they go to the engine together (engine.SubmitBatch), before
	// the replies are awaited or a command that is not an op runs.
	pending      []*engine.Request
	pendingSlots []int
	interner     *resp.StringInterner
	tally        opTally

	dr directReply

	authed bool
	name   string
	quit   bool // close after this round's replies

	// Seldom used, kept out of the hot fields' cache lines.
	//
	// inLent is the pooled read buffer in use (c.in), lent while a round
	// needs more than readBufferBytesKeepMax; inKept is the connection's
	// own buffer meanwhile.
	inLent *readBuffer
	inKept []byte
	// A goroutine's socket, to write what it takes at once without a
	// deadline (writeRaw); nil for a connection that is not a socket.
	raw      syscall.RawConn
	rawWrite func(fd uintptr) bool // c.writeRawNow, bound once
	rawBuf   []byte                // writeRawNow's bytes, written count and error
	rawN     int
	rawErr   error
}

// slot is one command's place in the reply order: an engine request, or a
// range of the immediate buffer.
type slot struct {
	req      *engine.Request
	kind     inventory.Kind
	from, to int
	err      error // the engine refused req (it was never submitted)
}

// newRESPConn makes a connection a goroutine serves (serve).
func newRESPConn(s *Server, nc net.Conn, id int64) *respConn {
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	c := newConn(s, id)
	c.nc, c.fd = nc, -1
	if sc, ok := nc.(syscall.Conn); ok {
		if raw, err := sc.SyscallConn(); err == nil {
			c.raw, c.rawWrite = raw, c.writeRawNow
		}
	}
	c.dr.init(c)
	return c
}

func newConn(s *Server, id int64) *respConn {
	return &respConn{
		s:        s,
		id:       id,
		dec:      resp.NewDecoder(s.cfg.limits()),
		in:       make([]byte, readBufferBytesMin),
		inMax:    max(s.cfg.ReadBufferBytesMax, s.cfg.RequestBytesMax+64),
		interner: resp.NewStringInterner(internEntriesMax),
		authed:   s.cfg.Password == "",
	}
}

// wake makes a blocked read return, so that an idle connection notices a
// shutdown; on the loop, it has the loop look (the loop closes its idle
// connections once the server is closing). Safe to call from another
// goroutine.
func (c *respConn) wake() {
	if c.loop != nil {
		c.loop.signal()
		return
	}
	c.nc.SetReadDeadline(time.Now())
}

// abort makes every read and write of the connection fail at once, for a
// shutdown that ran out of time. Safe to call from another goroutine
// while the connection is in Server.conns (its socket is closed only
// after it left them).
func (c *respConn) abort() {
	if c.loop != nil {
		shutdownFD(c.fd)
		return
	}
	c.nc.Close()
}

// Bounds of what one connection holds (see respConn).
const (
	// respWriteTimeout bounds one write of replies (at most
	// replyBufferBytesFlush and a reply) to a client that does not take
	// them; past it the connection is closed, as the SSE stream's
	// sseWriteTimeout does.
	respWriteTimeout = 30 * time.Second
	// replyBufferBytesFlush: a round's replies are written out each time
	// their encoding passes this many bytes, and a round takes no more
	// commands once its immediate replies do. A round of the contract's
	// ordinary replies (1,024 of under 64 bytes) is one write.
	replyBufferBytesFlush = 64 << 10
	// roundSearchStepsMax bounds the index entries one round's searches
	// may walk (the sum of their offsets and limits): four searches of
	// catalog.LimitMax, about 220 KB of results. It bounds both what the
	// round's requests hold and how long the engine's lock is held for
	// them (engine.SubmitBatch applies a round under one hold): a round
	// stops after the search that passes it, so at most one search of
	// catalog.OffsetMax + catalog.LimitMax entries (a few ms) runs past it.
	roundSearchStepsMax = 4 * catalog.LimitMax
	// requestsKeepMax bounds the requests a connection keeps between
	// rounds: a pipeline of this depth allocates none at steady state.
	requestsKeepMax = 64
	// readBufferBytesKeepMax bounds the read buffer a connection keeps
	// between rounds: a larger one goes back to readBuffers once empty.
	readBufferBytesKeepMax = 16 << 10
	// A kept request's buffers: larger ones are let go (a search's hits,
	// up to catalog.LimitMax; a hold's allocations and lines).
	hitsKeepMax        = catalog.LimitDefault
	allocationsKeepMax = 8
	linesKeepMax       = 64
)

// writeTimeout is respWriteTimeout (a variable so that a test can shorten
// it before it starts a server).
var writeTimeout = respWriteTimeout

// write writes b whole, waiting for the socket to take it for at most
// writeTimeout; it fails after that. On the loop's connections, writeFD
// waits in Go's netpoller; a goroutine's waits in its net.Conn with a
// write deadline, set only when the socket did not take b at once.
func (c *respConn) write(b []byte) error {
	if c.loop != nil {
		return writeFD(c.fd, b)
	}
	if c.raw == nil {
		// Not a socket (a test's): a deadline on every write. A round's
		// last part follows its encoding, whose time is at hand.
		at := clockEpoch.Add(c.readyAt)
		if c.encoded < len(c.slots) {
			at = time.Now()
		}
		c.nc.SetWriteDeadline(at.Add(writeTimeout))
		_, err := c.nc.Write(b)
		return err
	}
	n, err := c.writeRaw(b)
	if err != nil || n == len(b) {
		return err
	}
	c.nc.SetWriteDeadline(time.Now().Add(writeTimeout))
	_, err = c.nc.Write(b[n:])
	c.nc.SetWriteDeadline(time.Time{}) // writeRaw fails past a deadline
	return err
}

// writeRaw writes what a goroutine's socket takes at once, never waiting
// for room. It does not allocate: the function it hands the socket is
// bound once, its arguments and results are the connection's.
func (c *respConn) writeRaw(b []byte) (int, error) {
	c.rawBuf, c.rawN, c.rawErr = b, 0, nil
	err := c.raw.Write(c.rawWrite)
	n, werr := c.rawN, c.rawErr
	c.rawBuf, c.rawErr = nil, nil
	if err == nil {
		err = werr
	}
	return n, err
}

// writeRawNow is writeRaw's function on the socket: it writes c.rawBuf
// until the socket is full, and reports done whatever it wrote.
func (c *respConn) writeRawNow(fd uintptr) bool {
	for c.rawN < len(c.rawBuf) {
		m, err := syscall.Write(int(fd), c.rawBuf[c.rawN:])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			if err != syscall.EAGAIN {
				c.rawErr = err
			}
			break
		}
		c.rawN += m
	}
	return true
}

func (c *respConn) serve() {
	defer c.nc.Close()
	defer c.settle() // before the close
	for {
		full := c.round()
		if c.quit {
			return
		}
		if full {
			continue // more commands may already be buffered
		}
		if c.s.closingNow() || !c.read() {
			return
		}
	}
}

// read reads more bytes behind the unconsumed ones. It reports false when
// the connection is done.
func (c *respConn) read() bool {
	if c.readErr != nil {
		return false
	}
	c.makeRoom()
	n, err := c.nc.Read(c.in[c.end:])
	c.took(n)
	c.readErr = err
	return n > 0
}

// makeRoom moves the unconsumed bytes to the front of the read buffer and
// grows it when they fill it; an empty lent buffer goes back first.
func (c *respConn) makeRoom() {
	if c.start == c.end {
		c.start, c.end = 0, 0
		c.returnReadBuffer()
	} else if c.start > 0 {
		c.end = copy(c.in, c.in[c.start:c.end])
		c.start = 0
	}
	if c.end == len(c.in) {
		if len(c.in) >= c.inMax {
			// The decoder bounds a pending command below inMax: this is a
			// broken invariant, not bad input.
			panic("server: RESP read buffer full of an incomplete command")
		}
		c.grow()
	}
}

// took accounts for n bytes read behind the unconsumed ones.
func (c *respConn) took(n int) {
	if n == len(c.in)-c.end && len(c.in) < c.inMax {
		c.end += n
		c.grow() // reads fill the buffer: the client pipelines, read more at once
	} else {
		c.end += n
	}
	c.readAt = now()
	if n > 0 && c.wroteAt != 0 {
		c.s.metrics.observeStage(stageRead, c.readAt-c.wroteAt)
		c.wroteAt = 0
	}
}

// grow doubles the read buffer, up to inMax. Beyond readBufferBytesKeepMax
// it takes a buffer of inMax from readBuffers, lent until it is empty
// again, and keeps its own meanwhile.
func (c *respConn) grow() {
	size := min(2*len(c.in), c.inMax)
	var bigger []byte
	if size > readBufferBytesKeepMax && c.inLent == nil {
		rb, _ := readBuffers.Get().(*readBuffer)
		if rb == nil || len(rb.b) != c.inMax {
			rb = &readBuffer{b: make([]byte, c.inMax)} // none, or another server's size
		}
		c.inLent, c.inKept, bigger = rb, c.in, rb.b
	} else {
		bigger = make([]byte, size)
	}
	copy(bigger, c.in[c.start:c.end])
	c.end -= c.start
	c.start = 0
	c.in = bigger
}

// returnReadBuffer gives back the lent read buffer once it is empty: an
// idle connection keeps at most readBufferBytesKeepMax.
func (c *respConn) returnReadBuffer() {
	if c.inLent != nil && c.start == c.end {
		c.putReadBuffer()
	}
}

// putReadBuffer is returnReadBuffer's work, out of line so that the check
// is inlined into makeRoom.
func (c *respConn) putReadBuffer() {
	c.start, c.end = 0, 0
	readBuffers.Put(c.inLent)
	c.in, c.inLent, c.inKept = c.inKept, nil, nil
}

// readBuffer is a read buffer in readBuffers (a pointer, so that the pool
// takes it without an allocation).
type readBuffer struct{ b []byte }

// readBuffers and requestPool are what the rounds beyond a connection's
// keep (readBufferBytesKeepMax, requestsKeepMax) borrow: shared by every
// connection of the process, emptied by the garbage collector when no
// round needs them. Their items hold nothing of the connection that used
// them last (a request's Source is set again when it is taken).
var (
	readBuffers sync.Pool // of *readBuffer
	requestPool sync.Pool // of *engine.Request
)

// round serves the complete commands in the buffer, up to the round's
// bound. It reports whether it stopped at the bound (more may be buffered).
func (c *respConn) round() (full bool) {
	c.decode(false)
	return c.finish()
}

// decode runs the buffer's complete commands into a new round, up to its
// bound (full): ops are decoded and queued, other commands answered. On
// the loop (onLoop), a CHANGES command, which may wait for events, is left
// in the buffer and changesNext set: the goroutine the connection goes to
// next runs it.
func (c *respConn) decode(onLoop bool) {
	c.slots = c.slots[:0]
	c.immediate = c.immediate[:0]
	c.traced = nil
	c.encoded, c.more, c.steps = 0, false, 0
	depth := c.s.cfg.PipelineDepthMax
	for !c.quit {
		if len(c.slots) == depth || len(c.immediate) >= replyBufferBytesFlush || c.steps >= roundSearchStepsMax {
			c.more = true
			break
		}
		args, n, derr := c.dec.Next(c.in[c.start:c.end])
		var name resp.Name
		if derr == nil && args != nil {
			name = resp.Lookup(args[0])
			if onLoop && loopDefersChanges && name == resp.NameChanges {
				c.changesNext = true // not consumed: decoded again off the loop
				break
			}
		}
		c.start += n
		if derr != nil {
			c.s.metrics.commandErrors.Add(1)
			c.err(derr.Msg)
			if derr.Fatal {
				c.s.metrics.protocolErrors.Add(1)
				c.quit = true
			}
			continue
		}
		if args == nil {
			if n == 0 {
				break
			}
			continue
		}
		c.command(name, args)
	}
}

// finish serves the decoded round: it waits for the direct reply before
// it, submits the round's ops, waits for them and writes the replies. It
// reports whether the round was full (more may be buffered).
func (c *respConn) finish() (full bool) {
	if len(c.slots) == 0 {
		return false
	}
	if !c.settle() {
		c.quit = true
		return false
	}
	if c.submitRound(false) {
		return false
	}
	c.reply()
	return c.full()
}

// full reports whether the round stopped at its bound: as many commands
// as one may hold, immediate replies of replyBufferBytesFlush, or searches
// of roundSearchStepsMax index steps.
func (c *respConn) full() bool { return c.more }

// submitRound submits the round's pending ops. It reports true when the
// flusher replies to the round itself (a direct reply, resp_direct.go).
// arm is set by the loop alone: a round it would park has its last op
// notify (armNotify); a goroutine waits for its requests instead.
func (c *respConn) submitRound(arm bool) (direct bool) {
	direct = c.direct()
	if arm && !direct {
		c.armNotify()
	}
	c.submitPending()
	if c.traced != nil {
		c.submittedAt = now()
	}
	return direct && c.submitted()
}

// reply waits for the round's engine requests in order and writes their
// replies.
func (c *respConn) reply() {
	if !c.settle() { // a direct reply before this round's
		c.quit = true
		return
	}
	c.writeReplies(nil)
}

// writeReplies encodes the round's replies from c.encoded on and writes
// them, a part of about replyBufferBytesFlush at a time, each waiting for
// the socket. err is the failed write of a part before: once a write
// failed the rest are encoded (their requests waited for and taken back)
// but not written, and the connection closes.
func (c *respConn) writeReplies(err error) {
	for c.encoded < len(c.slots) {
		c.encodeReplies()
		if err == nil {
			err = c.write(c.out)
		}
	}
	if err != nil {
		c.quit = true
	}
	c.replied()
}

// discardReplies takes back the round's requests without writing their
// replies (the write failed; the connection closes).
func (c *respConn) discardReplies() {
	for c.encoded < len(c.slots) {
		c.encodeReplies()
	}
	c.out = c.out[:0]
	c.encoded = 0
}

// repliesReady reports whether every reply of the round can be encoded
// without waiting for the engine.
func (c *respConn) repliesReady() bool {
	for i := range c.slots {
		if sl := &c.slots[i]; sl.req != nil && sl.err == nil && sl.req != c.notifyReq && !sl.req.Ready() {
			return false
		}
	}
	return true
}

// encodeReplies waits for the round's engine requests in order and
// encodes their replies into c.out, from slot c.encoded on, until every
// reply of the round is encoded or c.out holds replyBufferBytesFlush.
func (c *respConn) encodeReplies() {
	c.out = c.out[:0]
	i := c.encoded
	for i < len(c.slots) && len(c.out) < replyBufferBytesFlush {
		sl := &c.slots[i]
		i++
		if sl.req == nil {
			c.out = append(c.out, c.immediate[sl.from:sl.to]...)
			continue
		}
		r := sl.req
		if sl.err != nil {
			// Refused by the engine before it applied anything (it
			// closed): of the refused class, as every engine error.
			c.out = appendEngineError(c.out, sl.err)
			c.tally.add(sl.kind, resultError)
			c.recycle(r)
			sl.req, sl.err = nil, nil
			continue
		}
		var err error
		if r == c.notifyReq {
			// Released with Notify: its outcome is set, Wait has no token.
			r.Notify, c.notifyReq = nil, nil
			err = r.Err
		} else {
			err = r.Wait()
		}
		if err != nil {
			c.out = appendEngineError(c.out, err)
			c.tally.add(sl.kind, resultError)
		} else {
			c.out = resp.AppendResult(c.out, &r.Op, &r.Result)
			c.tally.add(sl.kind, resultOf(r.Result.Code))
		}
		if r == c.traced {
			c.observeEngine(r)
		}
		c.recycle(r)
		sl.req = nil
	}
	c.encoded = i
	if i == len(c.slots) {
		c.readyAt = now()
	}
	// Counted before the caller writes them (metrics.count).
	c.s.metrics.count(protocolRESP, &c.tally)
}

// recycle takes back a request whose reply is encoded (or that was never
// submitted) for the connection's next op: its search hits are cleared
// (they point at the catalog's strings) and buffers grown beyond the
// defaults let go, so that a kept request holds little.
//
// The result's slices are the buffers' (the engine keeps what it grew in
// r.Buffers and r.Lines), so they tell without a look at the buffers,
// which the common ops never touch.
func (c *respConn) recycle(r *engine.Request) {
	if res := &r.Result; res.Hits != nil || res.Allocations != nil ||
		cap(res.Lines) > linesKeepMax || cap(r.Op.Lines) > linesKeepMax {
		trim(r)
	}
	r.Result = inventory.Result{}
	c.free = append(c.free, r)
}

// trim is recycle's work on a request that lent buffers for its reply, or
// grew them: out of line, so that recycle is inlined for the common ops.
//
//go:noinline
func trim(r *engine.Request) {
	res := &r.Result
	clear(res.Hits)
	if cap(res.Hits) > hitsKeepMax || cap(res.Allocations) > allocationsKeepMax {
		*r.Buffers = newBuffers()
	}
	if cap(res.Lines) > linesKeepMax {
		r.Lines = nil
	}
	if cap(r.Op.Lines) > linesKeepMax {
		r.Op.Lines = nil
	}
}

// newBuffers are a request's buffers lent for its replies, of the
// defaults' sizes.
func newBuffers() inventory.Buffers {
	return inventory.Buffers{
		Allocations: make([]inventory.Allocation, 0, allocationsKeepMax),
		Hits:        make([]catalog.Result, 0, hitsKeepMax),
	}
}

// replied times the round once its replies are written, and lets go of
// what a large round grew: reply buffers (a CHANGES of 10,000 events is a
// few MB, in c.immediate and again in c.out), requests beyond
// requestsKeepMax (to requestPool). Kept, every connection that once
// served one would pin that much for the rest of its life.
func (c *respConn) replied() {
	c.encoded = 0
	if cap(c.out) > replyBufferBytesKeepMax {
		c.out = nil
	}
	if cap(c.immediate) > replyBufferBytesKeepMax {
		c.immediate = nil
	}
	if len(c.free) > requestsKeepMax {
		for _, r := range c.free[requestsKeepMax:] {
			requestPool.Put(r)
		}
		clear(c.free[requestsKeepMax:])
		c.free = c.free[:requestsKeepMax]
	}
	c.wroteAt = now()
	m := &c.s.metrics
	m.observeStage(stageReply, c.wroteAt-c.readyAt)
	m.flush(protocolRESP, &c.tally, c.wroteAt-c.readAt)
	m.observePipeline(len(c.slots))
}

// observeEngine times the engine's stages of the round's first request,
// once its Wait returned: parse and queue from the connection's clock, the
// rest from the engine's trace of the request.
func (c *respConn) observeEngine(r *engine.Request) {
	m := &c.s.metrics
	woke := now()
	m.observeStage(stageParse, c.submitAt-c.readAt)
	m.observeStage(stageQueue, c.submittedAt-c.submitAt)
	t := &r.Trace
	if t.Synced.IsZero() {
		// Not a durable batch (write or none mode, a read, a refusal).
		m.observeStage(stageWake, woke-c.submittedAt)
		return
	}
	m.observeStage(stageBatch, instantOf(t.Taken)-c.submittedAt)
	m.observeStage(stageWrite, t.Written.Sub(t.Taken))
	m.observeStage(stageSync, t.Synced.Sub(t.Written))
	m.observeStage(stageWake, woke-instantOf(t.Synced))
	r.Trace = engine.Trace{}
}

// mark and done bracket an immediate reply appended to c.immediate.
func (c *respConn) mark() int { return len(c.immediate) }

func (c *respConn) done(from int) {
	c.slots = append(c.slots, slot{from: from, to: len(c.immediate)})
}

// err queues "-ERR detail".
func (c *respConn) err(detail string) {
	from := c.mark()
	c.immediate = resp.AppendErr(c.immediate, detail)
	c.done(from)
}

// errWord queues an error reply with its own error word.
func (c *respConn) errWord(msg string) {
	from := c.mark()
	c.immediate = resp.AppendError(c.immediate, msg)
	c.done(from)
}

// command runs one command; name is resp.Lookup(args[0]).
func (c *respConn) command(name resp.Name, args [][]byte) {
	if !c.authed && name != resp.NameAuth && name != resp.NameHello && name != resp.NameQuit {
		c.s.metrics.commandErrors.Add(1)
		c.errWord("NOAUTH Authentication required.")
		return
	}
	if k := name.Kind(); k != 0 {
		c.op(name, k, args)
		return
	}
	c.s.metrics.commandsOther.Add(1)
	switch name {
	case resp.NamePing:
		from := c.mark()
		switch len(args) {
		case 1:
			c.immediate = resp.AppendSimple(c.immediate, "PONG")
		case 2:
			c.immediate = resp.AppendBulkBytes(c.immediate, args[1])
		default:
			c.immediate = resp.AppendErr(c.immediate, resp.ArityError(name))
		}
		c.done(from)
	case resp.NameEcho:
		from := c.mark()
		if len(args) == 2 {
			c.immediate = resp.AppendBulkBytes(c.immediate, args[1])
		} else {
			c.immediate = resp.AppendErr(c.immediate, resp.ArityError(name))
		}
		c.done(from)
	case resp.NameQuit:
		from := c.mark()
		c.immediate = resp.AppendOK(c.immediate)
		c.done(from)
		c.quit = true
	case resp.NameCommand:
		// redis-cli asks COMMAND DOCS for its hints; an empty answer makes
		// it fall back to its built-in help.
		from := c.mark()
		c.immediate = resp.AppendArray(c.immediate, 0)
		c.done(from)
	case resp.NameAuth:
		c.auth(args)
	case resp.NameHello:
		c.hello(args)
	case resp.NameClient:
		c.client(args)
	case resp.NameChanges:
		c.submitPending() // in order with the ops before it: CHANGES reads what they wrote
		c.changes(args)
	default:
		c.s.metrics.commandErrors.Add(1)
		c.err("unknown command '" + printable(args[0]) + "' (commands: " + commandList + ")")
	}
}

func (c *respConn) op(name resp.Name, k inventory.Kind, args [][]byte) {
	var r *engine.Request
	if n := len(c.free); n > 0 {
		r = c.free[n-1]
		c.free = c.free[:n-1]
	} else {
		if r, _ = requestPool.Get().(*engine.Request); r == nil {
			r = engine.NewRequest()
			// The connection's requests keep their buffers: a reply is
			// written before its request is reused.
			b := newBuffers()
			r.Buffers = &b
		}
		r.Source = uint64(c.id)
	}
	if detail := resp.DecodeOp(name, args, c.interner, &r.Op); detail != "" {
		c.recycle(r)
		c.s.metrics.commandErrors.Add(1)
		c.tally.add(k, resultOf(inventory.CodeInvalid))
		c.err(detail)
		return
	}
	r.Err = nil
	r.Checked = true // DecodeOp ran Op.Check (resp.DecodeOp)
	if k == inventory.KindSearch {
		c.steps += r.Op.Query.Offset + r.Op.Query.Limit // Check filled in the default limit
	}
	if c.traced == nil {
		c.traced = r
		c.submitAt = now()
	}
	c.pending = append(c.pending, r)
	c.pendingSlots = append(c.pendingSlots, len(c.slots))
	c.slots = append(c.slots, slot{req: r, kind: k})
}

// submitPending submits the round's pending ops in one batch. Those the
// engine refused (it is closing) are answered with its error.
func (c *respConn) submitPending() {
	if len(c.pending) == 0 {
		return
	}
	n, err := c.s.engine.SubmitBatch(c.pending)
	for i := n; i < len(c.pending); i++ {
		sl := &c.slots[c.pendingSlots[i]]
		if c.traced == sl.req {
			c.traced = nil
		}
		sl.err = err
	}
	clear(c.pending)
	c.pending, c.pendingSlots = c.pending[:0], c.pendingSlots[:0]
}

// commandList is every command word, for the unknown-command error.
var commandList = strings.Join(resp.Words(), ", ")

// appendEngineError appends the outcome class of an engine error (DESIGN.md
// "Outcome classes"): -UNAVAILABLE when the request was refused and never
// applied, -UNKNOWN when it was applied but may not be durable.
func appendEngineError(b []byte, err error) []byte {
	switch {
	case errors.Is(err, engine.ErrOutcomeUnknown):
		return resp.AppendError(b, "UNKNOWN "+err.Error())
	case errors.Is(err, engine.ErrUnavailable):
		var np *engine.NotPrimaryError
		if errors.As(err, &np) {
			// A node of a cluster that is not the primary: the client
			// follows the address (client.PrimaryOf).
			return resp.AppendError(b, "UNAVAILABLE "+np.Error())
		}
		return resp.AppendError(b, "UNAVAILABLE "+err.Error())
	}
	return resp.AppendErr(b, err.Error())
}

// unavailableDetail is the HTTP detail of a refused request: a node that
// is not the primary names the primary's HTTP address.
func unavailableDetail(err error) string {
	var np *engine.NotPrimaryError
	if errors.As(err, &np) {
		if np.PrimaryHTTP != "" {
			return "not primary, primary at " + np.PrimaryHTTP
		}
		return np.Error()
	}
	return err.Error()
}

// checkPassword compares in constant time. With no password configured the
// default user needs none, as in Redis.
func (c *respConn) checkPassword(user, pass []byte) bool {
	if user != nil && string(user) != "default" {
		return false
	}
	if c.s.cfg.Password == "" {
		return true
	}
	return subtle.ConstantTimeCompare(pass, []byte(c.s.cfg.Password)) == 1
}

const (
	wrongPass = "WRONGPASS invalid username-password pair or user is disabled."
)

func (c *respConn) auth(args [][]byte) {
	var user, pass []byte
	switch len(args) {
	case 2:
		pass = args[1]
	case 3:
		user, pass = args[1], args[2]
	default:
		c.err(resp.ArityError(resp.NameAuth))
		return
	}
	if c.s.cfg.Password == "" && user == nil {
		c.err("AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?")
		return
	}
	if !c.checkPassword(user, pass) {
		c.errWord(wrongPass)
		return
	}
	c.authed = true
	from := c.mark()
	c.immediate = resp.AppendOK(c.immediate)
	c.done(from)
}

func (c *respConn) hello(args [][]byte) {
	i := 1
	if len(args) > 1 {
		v, ok := resp.ParseInt(args[1])
		if !ok {
			c.err("Protocol version is not an integer or out of range")
			return
		}
		if v != 2 {
			// RESP3 would change every reply shape of the contract.
			c.errWord("NOPROTO sorry, this protocol version is not supported")
			return
		}
		i = 2
	}
	authed, name := c.authed, c.name
	for i < len(args) {
		switch {
		case resp.EqualFold(args[i], "AUTH") && i+2 < len(args):
			if !c.checkPassword(args[i+1], args[i+2]) {
				c.errWord(wrongPass)
				return
			}
			authed = true
			i += 3
		case resp.EqualFold(args[i], "SETNAME") && i+1 < len(args):
			if !validClientName(args[i+1]) {
				c.err("Client names cannot contain spaces, newlines or special characters.")
				return
			}
			name = string(args[i+1])
			i += 2
		default:
			c.err("Syntax error in HELLO option '" + printable(args[i]) + "'")
			return
		}
	}
	if !authed {
		c.errWord("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time")
		return
	}
	c.authed, c.name = authed, name
	from := c.mark()
	b := resp.AppendArray(c.immediate, 16)
	b = resp.AppendBulk(b, "server")
	b = resp.AppendBulk(b, "allot")
	b = resp.AppendBulk(b, "version")
	b = resp.AppendBulk(b, c.s.cfg.Version)
	b = resp.AppendBulk(b, "proto")
	b = resp.AppendInt(b, 2)
	b = resp.AppendBulk(b, "id")
	b = resp.AppendInt(b, c.id)
	b = resp.AppendBulk(b, "mode")
	b = resp.AppendBulk(b, "standalone")
	b = resp.AppendBulk(b, "role")
	// As Redis says it: "replica" on a standby (it serves reads and
	// refuses mutations), "master" on the primary or a single node.
	if c.s.engine.Standby() {
		b = resp.AppendBulk(b, "replica")
	} else {
		b = resp.AppendBulk(b, "master")
	}
	b = resp.AppendBulk(b, "modules")
	b = resp.AppendArray(b, 0)
	b = resp.AppendBulk(b, "durability")
	b = resp.AppendBulk(b, string(c.s.engine.Durability()))
	c.immediate = b
	c.done(from)
}

func (c *respConn) client(args [][]byte) {
	if len(args) < 2 {
		c.err(resp.ArityError(resp.NameClient))
		return
	}
	sub := args[1]
	from := c.mark()
	switch {
	case resp.EqualFold(sub, "SETNAME") && len(args) == 3:
		if !validClientName(args[2]) {
			c.err("Client names cannot contain spaces, newlines or special characters.")
			return
		}
		c.name = string(args[2])
		c.immediate = resp.AppendOK(c.immediate)
	case resp.EqualFold(sub, "GETNAME") && len(args) == 2:
		if c.name == "" {
			c.immediate = resp.AppendNullBulk(c.immediate)
		} else {
			c.immediate = resp.AppendBulk(c.immediate, c.name)
		}
	case resp.EqualFold(sub, "SETINFO") && len(args) == 4:
		// Client libraries announce themselves; nothing to keep.
		c.immediate = resp.AppendOK(c.immediate)
	case resp.EqualFold(sub, "ID") && len(args) == 2:
		c.immediate = resp.AppendInt(c.immediate, c.id)
	default:
		c.err("unknown subcommand or wrong number of arguments for 'client|" + printable(sub) + "' (CLIENT SETNAME <name> | GETNAME | SETINFO <attr> <value> | ID)")
		return
	}
	c.done(from)
}

// validClientName is Redis's rule: printable ASCII, no spaces.
func validClientName(b []byte) bool {
	for _, ch := range b {
		if ch < '!' || ch > '~' {
			return false
		}
	}
	return true
}

// printable quotes a client's word into an error message: at most 64 bytes,
// with bytes outside printable ASCII shown as escapes.
func printable(b []byte) string {
	if len(b) > 64 {
		b = b[:64]
	}
	q := strconv.QuoteToASCII(string(b))
	return q[1 : len(q)-1]
}
