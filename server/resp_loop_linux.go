package server

import (
	"fmt"
	"net"
	"os"
	"runtime"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"allot/engine"
	"allot/internal/epoll"
)

// The event loop (Config.RESPIO "loop", the default on Linux). One
// goroutine, locked to its thread, waits on an epoll set of every RESP
// connection's socket and serves whatever is ready: it reads, decodes,
// submits the round's ops, and when every reply is ready at once (write
// and none modes, reads, refusals, PING) encodes and writes them, all on
// that thread, as Redis serves its clients from one loop. A goroutine per
// connection (RESPIO "goroutine") costs a wake-up of the Go scheduler per
// read instead, often on the other core, and a read that finds nothing
// before every wait: on a 2-vCPU machine shared with its clients that put
// allot's PING at 0.6-0.8 of Redis's, where the loop is level with it
// (docs/results.md, "The event loop").
//
// The loop never waits for the disk or a client:
//   - fsync mode, a round of one op: the flusher writes the reply itself
//     (the direct reply, resp_direct.go) and the loop reads on;
//   - fsync mode, a round of several ops: the connection is parked, its
//     socket out of the epoll set, and the round's last op, once released
//     (the engine releases in submission order), puts it on the loop's
//     ready list (engine.Request.Notify, armNotify): the loop writes the
//     replies and watches the socket again. One signal from the flusher
//     wakes the loop for every connection of a batch.
//
// A round that would wait otherwise is handed to a goroutine, the socket
// out of the epoll set until the goroutine gives the connection back: the
// direct reply of the connection's previous op is still on its way; the
// socket did not take all the replies (a client that does not read);
// CHANGES, which may block for events (left undecoded on the loop, run by
// the goroutine). The goroutine finishes the round as the per-connection
// path does, serves the rounds already buffered behind it, and gives the
// connection back; allot_resp_loop_handoffs_total counts them.
//
// A goroutine that waits for a client's socket to take replies waits in
// Go's netpoller, not in a system call (writeFD), and for at most
// writeTimeout: a client that never reads costs a parked goroutine and
// one part of a round's replies until then, and its connection is closed
// after. It once waited in poll(2) with no timeout: an OS thread per such
// client for ever, and Go's limit of 10,000 threads is a fatal error.
//
// Sockets: the accept goroutine takes each connection from the Go
// listener, duplicates its descriptor and closes the Go one, so that only
// the loop's epoll set watches it (Go's netpoller would otherwise wake a
// thread for every request too). A socket is closed only by closeFD,
// after its direct reply is out, under the server's lock as it leaves
// Server.conns; until then shutdownFD (a shutdown that ran out of time)
// is safe from any goroutine.
type respLoop struct {
	s    *Server
	epfd int
	wake int // eventfd: signal writes it
	// conns are the loop's connections by socket, the ones handed to a
	// goroutine included.
	conns map[int32]*respConn

	mu       sync.Mutex
	incoming []*respConn // accepted, not yet in the epoll set
	back     []*respConn // given back by their goroutine
	ready    []*respConn // parked, their round's replies now ready (armNotify)
	// readySpare is the ready list's other buffer: the flusher appends to
	// one while the loop serves the other.
	readySpare []*respConn
	// authDue are connections whose authentication deadline passed
	// (Config.AuthTimeout; armAuthDeadline).
	authDue []*respConn
	poked   bool // wake is written and not yet read
	exited  bool // run returned: epfd and wake are closed
	// done is closed once run has returned, its epoll set and eventfd
	// closed: Shutdown waits for it.
	done chan struct{}
}

func newRESPLoop(s *Server) (*respLoop, error) {
	l := &respLoop{s: s, conns: map[int32]*respConn{}, done: make(chan struct{})}
	var err error
	if l.epfd, l.wake, err = epoll.Open(); err != nil {
		return nil, fmt.Errorf("server: RESP loop: %w", err)
	}
	return l, nil
}

// loopAvailable: this platform has the event loop.
const loopAvailable = true

// close releases a loop that never ran.
func (l *respLoop) close() {
	syscall.Close(l.epfd)
	syscall.Close(l.wake)
}

// newLoopConn makes a connection the event loop serves, on socket fd.
func newLoopConn(s *Server, l *respLoop, fd int, id int64) *respConn {
	c := newConn(s, id)
	c.loop, c.fd = l, fd
	if s.engine.Durability() == engine.DurabilityFsync {
		c.loopNotify = func(*engine.Request) { l.enqueue(&l.ready, c) }
	}
	c.dr.init(c)
	if s.cfg.Password != "" {
		l.armAuthDeadline(c, s.cfg.AuthTimeout)
	}
	return c
}

// armAuthDeadline has the loop look at c after d: closed then unless it
// authenticated (closeUnauthenticated).
func (l *respLoop) armAuthDeadline(c *respConn, d time.Duration) {
	time.AfterFunc(d, func() {
		l.mu.Lock()
		if !l.exited {
			l.authDue = append(l.authDue, c)
			l.pokeLocked()
		}
		l.mu.Unlock()
	})
}

// closeUnauthenticated closes the connections of due that are still the
// loop's and not authenticated, with -ERR saying why. One away on a
// goroutine is looked at again shortly: only the loop reads authed.
func (l *respLoop) closeUnauthenticated(due []*respConn) {
	for _, c := range due {
		if l.conns[int32(c.fd)] != c {
			continue // closed already
		}
		if !c.onLoop {
			l.armAuthDeadline(c, 100*time.Millisecond)
			continue
		}
		if c.authed {
			continue
		}
		syscall.Write(c.fd, authTimeoutReply(l.s.cfg.AuthTimeout))
		l.closeLoopConn(c)
	}
}

// signal has the loop look at its incoming and returned connections and
// at the server's state. Safe from any goroutine.
func (l *respLoop) signal() {
	l.mu.Lock()
	l.pokeLocked()
	l.mu.Unlock()
}

// wait waits until run has returned.
func (l *respLoop) wait() { <-l.done }

// pokeLocked writes the eventfd unless it is written and not yet read.
func (l *respLoop) pokeLocked() {
	if !l.poked && !l.exited {
		l.poked = true
		epoll.Wake(l.wake)
	}
}

// adoptFD takes an accepted connection's socket from Go for the loop: it
// returns a duplicate of its descriptor, non-blocking and close-on-exec,
// and closes nc (so Go's netpoller no longer watches the socket).
func adoptFD(nc net.Conn) (int, error) {
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return -1, fmt.Errorf("server: RESP loop: not a TCP connection (%T)", nc)
	}
	tc.SetNoDelay(true)
	raw, err := tc.SyscallConn()
	if err != nil {
		return -1, err
	}
	fd := -1
	var derr error
	if err := raw.Control(func(s uintptr) {
		r, _, errno := syscall.Syscall(syscall.SYS_FCNTL, s, syscall.F_DUPFD_CLOEXEC, 0)
		if errno != 0 {
			derr = errno
			return
		}
		fd = int(r)
	}); err != nil {
		return -1, err
	}
	if derr != nil {
		return -1, fmt.Errorf("server: RESP loop: dup: %w", derr)
	}
	nc.Close() // the Go side's descriptor; the socket stays open on fd
	// The duplicate shares the open file, non-blocking as Go made it; say
	// so anyway, the loop depends on it.
	if err := syscall.SetNonblock(fd, true); err != nil {
		syscall.Close(fd)
		return -1, err
	}
	return fd, nil
}

// add hands an accepted connection to the loop.
func (l *respLoop) add(c *respConn) { l.enqueue(&l.incoming, c) }

// giveBack returns a connection from its goroutine to the loop.
func (l *respLoop) giveBack(c *respConn) { l.enqueue(&l.back, c) }

// enqueue puts c on one of the loop's lists and signals it. A connection
// accepted just before a shutdown whose loop is already gone is closed
// here.
func (l *respLoop) enqueue(list *[]*respConn, c *respConn) {
	l.mu.Lock()
	if l.exited {
		l.mu.Unlock()
		c.closeFD()
		return
	}
	*list = append(*list, c)
	l.pokeLocked()
	l.mu.Unlock()
}

// run serves until the server is closing and every connection is closed.
func (l *respLoop) run() {
	runtime.LockOSThread()
	defer func() {
		if testLoopExitHook != nil {
			testLoopExitHook()
		}
		l.mu.Lock()
		l.exited = true
		l.close()
		l.mu.Unlock()
		close(l.done)
	}()
	events := make([]syscall.EpollEvent, 256)
	for {
		n, err := epoll.Wait(l.epfd, events)
		if err != nil {
			// Not a condition of one connection: the loop cannot go on.
			panic(fmt.Sprintf("server: RESP loop: epoll_wait: %v", err))
		}
		for i := range n {
			fd := events[i].Fd
			if testEventHook != nil {
				testEventHook(fd)
			}
			if int(fd) == l.wake {
				if l.signalled() {
					return
				}
				continue
			}
			if c := l.conns[fd]; c != nil {
				if !c.onLoop {
					// Parked (park): read nothing until its replies
					// are out; watch puts it back then.
					l.unwatch(c)
					continue
				}
				l.serve(c)
			}
		}
	}
}

// signalled takes the incoming and returned connections, closes idle ones
// when the server is closing, and reports whether the loop is done.
func (l *respLoop) signalled() (done bool) {
	var b [8]byte
	syscall.Read(l.wake, b[:])
	l.mu.Lock()
	l.poked = false
	incoming, back, ready, authDue := l.incoming, l.back, l.ready, l.authDue
	l.incoming, l.back, l.ready, l.authDue = nil, nil, l.readySpare[:0], nil
	l.mu.Unlock()
	for i, c := range ready {
		l.replyParked(c)
		ready[i] = nil
	}
	l.readySpare = ready
	closing := l.s.closingNow()
	for _, c := range incoming {
		l.conns[int32(c.fd)] = c
		if closing || !l.watch(c) {
			l.closeLoopConn(c)
		}
	}
	for _, c := range back {
		if c.quit || closing || !l.watch(c) {
			l.closeLoopConn(c)
		}
	}
	// After incoming: a deadline may come before its connection did.
	l.closeUnauthenticated(authDue)
	if closing {
		// Every connection on the loop is idle between rounds: close
		// them; those on a goroutine come back, and are closed then.
		for _, c := range l.conns {
			if c.onLoop {
				l.closeLoopConn(c)
			}
		}
		if len(l.conns) > 0 {
			return false
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		if len(l.incoming) > 0 || len(l.back) > 0 || len(l.ready) > 0 {
			return false // they signalled: the loop looks again
		}
		l.exited = true // from now on enqueue closes what comes
		return true
	}
	return false
}

// Seen by tests, set before a server starts: every epoll_ctl the loops
// make (its op), every event a loop takes (its socket), a loop's return.
var (
	testEpollCtlHook func(op int)
	testEventHook    func(fd int32)
	// testLoopExitHook runs as the loop returns, before it closes its
	// epoll set.
	testLoopExitHook func()
)

// watch puts c's socket in the epoll set, unless it is still there (a
// parked connection's); the loop serves it from now on.
func (l *respLoop) watch(c *respConn) bool {
	if !c.inEpoll {
		ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP, Fd: int32(c.fd)}
		if testEpollCtlHook != nil {
			testEpollCtlHook(syscall.EPOLL_CTL_ADD)
		}
		if err := syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_ADD, c.fd, &ev); err != nil {
			l.s.cfg.Logger.Error("server: RESP loop: epoll_ctl add", "err", err)
			return false
		}
		c.inEpoll = true
	}
	c.onLoop = true
	return true
}

// unwatch takes c's socket out of the epoll set.
func (l *respLoop) unwatch(c *respConn) {
	if c.inEpoll {
		if testEpollCtlHook != nil {
			testEpollCtlHook(syscall.EPOLL_CTL_DEL)
		}
		syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_DEL, c.fd, nil)
		c.inEpoll = false
	}
	c.onLoop = false
}

// park stops serving c until the engine notifies that its round's replies
// are ready (replyParked), leaving its socket in the epoll set: a client
// whose pipeline waits for its replies sends nothing meanwhile, and taking
// the socket out and putting it back cost two system calls a round (a
// pipelined round in fsync mode; a round of one op is answered by the
// flusher directly and never parks). A socket that becomes readable
// while parked (a pipelining client, a hang-up) is taken out then (run),
// so that the level-triggered set does not wake the loop again and again.
func (l *respLoop) park(c *respConn) { c.onLoop = false }

// serve reads what c's socket has and serves the rounds it completes.
func (l *respLoop) serve(c *respConn) {
	if !c.readNow() {
		l.closeLoopConn(c)
		return
	}
	full, next := c.roundNow()
	l.serveRounds(c, full, next)
	if c.onLoop {
		c.returnReadBuffer() // idle until its client sends more
	}
}

// serveRounds goes on from a round the loop served (full, next): it hands
// the connection to a goroutine, closes it, parks it until the engine
// notifies, or serves the next round while the last was full.
func (l *respLoop) serveRounds(c *respConn, full bool, next resumeAt) {
	for {
		switch {
		case next != resumeNone:
			l.handOff(c, next)
			return
		case c.parked:
			// Read nothing until the round's replies are out; a QUIT in
			// the round closes the connection after them (replyParked).
			l.park(c)
			return
		case c.quit:
			l.closeLoopConn(c)
			return
		case !full:
			return
		}
		full, next = c.roundNow()
	}
}

// replyParked writes the replies of a round parked until the engine
// notified that they are ready (engine.Request.Notify on its last op),
// and goes on with the connection: the rounds already buffered behind it
// are served even when the server is closing (signalled closes the
// connection once it is idle).
func (l *respLoop) replyParked(c *respConn) {
	c.parked = false
	if !c.repliesReady() {
		// Not the engine's order (an op released before those ahead of
		// it): let a goroutine wait.
		l.handOff(c, resumeReply)
		return
	}
	full, next := c.writeRound()
	if next == resumeNone && !c.quit && !l.watch(c) {
		l.closeLoopConn(c)
		return
	}
	l.serveRounds(c, full, next)
	if c.onLoop {
		c.returnReadBuffer()
	}
}

// readNow reads what the socket has, without waiting. It reports false
// when the connection is done (closed by the peer, or failed).
func (c *respConn) readNow() bool {
	c.makeRoom()
	for {
		n, err := syscall.Read(c.fd, c.in[c.end:])
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			return true // woken for nothing (or a hang-up to come)
		case err != nil || n == 0:
			return false
		}
		c.took(n)
		return true
	}
}

// roundNow serves one round on the loop, never waiting: it reports whether
// the round was full and, when the round must wait, where a goroutine
// takes it up; or it parks the connection (c.parked) until the engine
// notifies that the round's replies are ready.
func (c *respConn) roundNow() (full bool, next resumeAt) {
	c.decode(true)
	if len(c.slots) == 0 {
		return false, c.then()
	}
	if d := &c.dr; d.req != nil && len(d.done) == 0 {
		return false, resumeFinish
	}
	if !c.settle() {
		c.quit = true
		return false, resumeNone
	}
	if c.submitRound(true) {
		return false, c.then() // the flusher replies
	}
	if r := c.notifyReq; r != nil {
		if c.slots[c.notifySlot].err == nil {
			c.parked = true
			return false, resumeNone
		}
		r.Notify, c.notifyReq = nil, nil // refused: never submitted
	}
	if !c.repliesReady() {
		return false, resumeReply
	}
	return c.writeRound()
}

// then is what follows a round the loop finished: a CHANGES left in the
// buffer goes to a goroutine.
func (c *respConn) then() resumeAt {
	if c.changesNext {
		return resumeRounds
	}
	return resumeNone
}

// writeRound encodes the round's replies, all ready, a part of about
// replyBufferBytesFlush at a time, and writes each while the socket takes
// them; what it does not take, and the parts after it, go from a
// goroutine.
func (c *respConn) writeRound() (full bool, next resumeAt) {
	for c.encoded < len(c.slots) {
		c.encodeReplies()
		n, err := loopWrite(c.fd, c.out)
		if err != nil {
			c.quit = true
			c.discardReplies()
			return false, resumeNone
		}
		if n < len(c.out) {
			c.rest = c.out[n:]
			return false, resumeWrite
		}
	}
	c.replied()
	return c.full(), c.then()
}

// armNotify has the round's last op, once released, tell the loop that
// every reply of the round is ready (the engine releases in submission
// order): in fsync mode the loop parks the connection instead of handing
// the round to a goroutine, and the flusher's one signal wakes the loop for
// the rounds of all its batch's connections.
func (c *respConn) armNotify() {
	if c.loopNotify == nil || !loopParks || len(c.pending) == 0 {
		return
	}
	i := len(c.pending) - 1
	c.notifyReq, c.notifySlot = c.pending[i], c.pendingSlots[i]
	c.notifyReq.Notify = c.loopNotify
}

// handOff takes c off the loop and has a goroutine take up its round at
// next, serve the rounds buffered behind it, and give it back.
func (l *respLoop) handOff(c *respConn, next resumeAt) {
	l.unwatch(c)
	l.s.metrics.handoffs[next].Add(1)
	go func() {
		var full bool
		switch next {
		case resumeFinish:
			full = c.finish()
		case resumeReply:
			c.reply()
			full = c.full()
		case resumeWrite:
			rest := c.rest
			c.rest = nil
			c.writeReplies(c.write(rest)) // and the round's parts after it
			full = c.full()
		}
		if c.changesNext {
			c.changesNext = false
			full = true
		}
		for full && !c.quit {
			full = c.round()
		}
		c.returnReadBuffer()
		l.giveBack(c)
	}()
}

// closeLoopConn closes one of the loop's connections.
func (l *respLoop) closeLoopConn(c *respConn) {
	l.unwatch(c)
	delete(l.conns, int32(c.fd))
	c.closeFD()
}

// closeFD ends a loop connection whose socket is out of the epoll set:
// once its direct reply is out (on a goroutine of its own if that means
// waiting), it leaves Server.conns and its socket is closed, under the
// server's lock, so that abort never sees a closed descriptor.
func (c *respConn) closeFD() {
	end := func() {
		c.settle()
		c.s.connGone(c, func() { syscall.Close(c.fd) })
	}
	if d := &c.dr; d.req != nil && len(d.done) == 0 {
		go end()
		return
	}
	end()
}

// shutdownFD makes every read and write of the socket fail (a shutdown
// that ran out of time); the descriptor stays open until its owner closes
// it.
func shutdownFD(fd int) { syscall.Shutdown(fd, syscall.SHUT_RDWR) }

// writeFD writes b whole to a non-blocking socket (on a goroutine, never
// the loop). When the socket is full it waits for room for at most
// writeTimeout (writeFDWait), and fails after.
func writeFD(fd int, b []byte) error {
	for len(b) > 0 {
		n, err := syscall.Write(fd, b)
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			return writeFDWait(fd, b, writeTimeout)
		case err != nil:
			return err
		}
		b = b[n:]
	}
	return nil
}

// writeFDWait writes b to a full socket, waiting for room in Go's
// netpoller, which parks the goroutine and not its thread, until timeout.
// It writes through a duplicate of the descriptor that the netpoller
// watches for this write only: the loop's socket is not in it otherwise,
// or Go would wake a thread for every request on it. A dup and two
// epoll_ctl per wait are nothing beside a client too slow to read. The
// duplicate is closed when the write is done; the loop's descriptor stays
// as it was, and a shutdownFD on it ends this wait (they are one socket).
//
// poll(2) on the socket with no timeout, as it once waited, is a blocking
// system call: every client that stopped reading held an OS thread for
// ever. A bounded poll and a cap on the threads waiting still costs a
// thread per slow client up to the cap. The loop's own epoll set (EPOLLOUT)
// would need the loop to keep each such round's state and a timer; the
// goroutine that holds the round already has both.
func writeFDWait(fd int, b []byte, timeout time.Duration) error {
	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("server: RESP write: dup: %w", err)
	}
	f := os.NewFile(uintptr(dup), "resp")
	defer f.Close()
	if err := f.SetWriteDeadline(time.Now().Add(timeout)); err != nil {
		// Not in the netpoller (it takes any socket): never wait outside it.
		return fmt.Errorf("server: RESP write: %w", err)
	}
	_, err = f.Write(b)
	return err
}

// loopWrite is the loop's write of a round's replies: writeFDNow (a
// variable so that a test can put a blocking write in its place and see
// the loop stall).
var loopWrite = writeFDNow

// writeFDNow writes what the socket takes at once.
func writeFDNow(fd int, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := syscall.Write(fd, b[n:])
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			return n, nil
		case err != nil:
			return n, err
		}
		n += m
	}
	return n, nil
}
