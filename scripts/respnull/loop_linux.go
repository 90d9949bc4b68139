package main

import (
	"errors"
	"fmt"
	"net"
	"runtime"
	"syscall"

	"allot/internal/epoll"
	"allot/server/resp"
)

// limits are allot serve's defaults: a frame allot would refuse, respnull
// refuses too.
var limits = resp.Limits{CommandBytesMax: 64 << 10, ArgsMax: 512}

// inBytes is a connection's read buffer: room for one whole command at the
// limit and the start of the next.
const inBytes = 128 << 10

// loop serves every connection from one goroutine locked to its thread.
type loop struct {
	ln    *net.TCPListener // kept open: lfd is its descriptor
	lfd   int
	epfd  int
	wake  int // an eventfd: close() writes it to stop run
	conns map[int32]*conn
	// With a journal (-sync): the connections answered in this round,
	// whose replies wait for its commit, and whether the round answered
	// a command other than PING (a write to make durable).
	journal *journal
	pending []*conn
	dirty   bool
}

type conn struct {
	fd   int
	in   []byte
	n    int // bytes in in
	dec  *resp.Decoder
	out  []byte
	sent int  // bytes of out already written
	hold bool // out is not drained: wait for EPOLLOUT, read nothing
	// queued: the connection is in loop.pending (its replies wait for the
	// round's commit).
	queued bool
}

func newLoop(ln *net.TCPListener) (*loop, error) {
	raw, err := ln.SyscallConn()
	if err != nil {
		return nil, err
	}
	l := &loop{ln: ln, conns: map[int32]*conn{}}
	if cerr := raw.Control(func(fd uintptr) { l.lfd = int(fd) }); cerr != nil {
		return nil, cerr
	}
	if l.epfd, l.wake, err = epoll.Open(l.lfd); err != nil {
		return nil, err
	}
	return l, nil
}

// close makes run return; run closes every connection.
func (l *loop) close() { epoll.Wake(l.wake) }

// run serves until close. It returns nil after close, or the first
// failure of epoll itself.
func (l *loop) run() error {
	runtime.LockOSThread()
	defer func() {
		for _, c := range l.conns {
			syscall.Close(c.fd)
		}
		syscall.Close(l.epfd)
		syscall.Close(l.wake)
		l.ln.Close()
	}()
	events := make([]syscall.EpollEvent, 256)
	for {
		n, err := epoll.Wait(l.epfd, events)
		if err != nil {
			return fmt.Errorf("epoll_wait: %w", err)
		}
		for i := range n {
			ev := &events[i]
			switch int(ev.Fd) {
			case l.wake:
				return nil
			case l.lfd:
				l.accept()
			default:
				if c := l.conns[ev.Fd]; c != nil {
					l.serve(c)
				}
			}
		}
		if err := l.commit(); err != nil {
			return err
		}
	}
}

// commit ends a round with a journal: one record and one fdatasync when
// the round answered a write, then every reply of the round. Without a
// journal, replies went out as they were made.
func (l *loop) commit() error {
	if l.journal == nil || len(l.pending) == 0 {
		return nil
	}
	if l.dirty {
		if err := l.journal.commit(); err != nil {
			return err
		}
		l.dirty = false
	}
	for i, c := range l.pending {
		c.queued = false
		if c.fd >= 0 {
			l.flush(c)
		}
		l.pending[i] = nil
	}
	l.pending = l.pending[:0]
	return nil
}

func (l *loop) accept() {
	for {
		fd, _, err := syscall.Accept4(l.lfd, syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC)
		if err != nil {
			return // EAGAIN, or a connection gone before it was taken
		}
		syscall.SetsockoptInt(fd, syscall.IPPROTO_TCP, syscall.TCP_NODELAY, 1)
		ev := syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(fd)}
		if err := syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_ADD, fd, &ev); err != nil {
			syscall.Close(fd)
			continue
		}
		l.conns[int32(fd)] = &conn{fd: fd, in: make([]byte, inBytes), dec: resp.NewDecoder(limits)}
	}
}

func (l *loop) drop(c *conn) {
	if c.fd < 0 {
		return
	}
	syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_DEL, c.fd, nil)
	syscall.Close(c.fd)
	delete(l.conns, int32(c.fd))
	c.fd = -1
}

// serve reads once, answers every complete command and writes the
// replies; what the socket does not take now waits for EPOLLOUT, and the
// connection reads nothing more until it is out (as a client that does
// not read its replies gets no more served).
func (l *loop) serve(c *conn) {
	if c.hold && !l.flush(c) {
		return
	}
	m, err := syscall.Read(c.fd, c.in[c.n:])
	if err != nil {
		if errors.Is(err, syscall.EAGAIN) {
			return
		}
		l.drop(c)
		return
	}
	if m == 0 {
		l.drop(c)
		return
	}
	c.n += m
	start, fatal := 0, false
	for !fatal {
		args, k, derr := c.dec.Next(c.in[start:c.n])
		start += k
		if derr != nil {
			c.out = resp.AppendErr(c.out, derr.Msg)
			fatal = derr.Fatal
			continue
		}
		if args == nil {
			if k == 0 {
				break
			}
			continue
		}
		var write bool
		c.out, write = reply(c.out, args)
		l.dirty = l.dirty || write
	}
	c.n = copy(c.in, c.in[start:c.n])
	if fatal {
		if l.journal != nil && l.dirty {
			// The replies before the bad frame are answers to writes.
			if err := l.journal.commit(); err != nil {
				l.drop(c)
				return
			}
			l.dirty = false
		}
		l.flush(c)
		l.drop(c)
		return
	}
	if c.n == len(c.in) {
		// The decoder bounds an incomplete command below the buffer.
		panic("respnull: read buffer full of an incomplete command")
	}
	if l.journal != nil {
		if !c.queued && len(c.out) > c.sent {
			c.queued = true
			l.pending = append(l.pending, c)
		}
		return
	}
	l.flush(c)
}

// flush writes out; it reports whether all of it is written. When the
// socket is full it arms EPOLLOUT; when it drains, EPOLLIN again.
func (l *loop) flush(c *conn) bool {
	for c.sent < len(c.out) {
		w, err := syscall.Write(c.fd, c.out[c.sent:])
		if err != nil {
			if errors.Is(err, syscall.EAGAIN) {
				if !c.hold {
					c.hold = true
					ev := syscall.EpollEvent{Events: syscall.EPOLLOUT, Fd: int32(c.fd)}
					syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_MOD, c.fd, &ev)
				}
				return false
			}
			l.drop(c)
			return false
		}
		c.sent += w
	}
	c.out, c.sent = c.out[:0], 0
	if c.hold {
		c.hold = false
		ev := syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(c.fd)}
		syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_MOD, c.fd, &ev)
	}
	return true
}

// reply is respnull's whole command set. write says the command is one
// a journal makes durable (anything but PING).
func reply(b []byte, args [][]byte) (out []byte, write bool) {
	if resp.Lookup(args[0]) == resp.NamePing {
		if len(args) == 2 {
			return resp.AppendBulkBytes(b, args[1]), false
		}
		return resp.AppendSimple(b, "PONG"), false
	}
	return resp.AppendOK(b), true
}
