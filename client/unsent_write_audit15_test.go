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
	"allot/server/servertest"
)

// A write that fails before the kernel took any byte of the request
// (the connection was reset meanwhile, or the caller's context ended
// between begin and the write) sent nothing: the server cannot have
// applied it. It was reported as a lost connection, of unknown outcome
// (MaybeApplied), so an unkeyed capture was not retried, by Client.Do
// nor by a caller, although nothing had left. It is ErrNotSent now.

// resetProxy forwards connections to target; reset ends the client's
// side of each with a TCP reset (SO_LINGER 0), as a middlebox that
// dropped the connection or a server killed with bytes unread does.
func resetProxy(t *testing.T, target string) (addr string, reset func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []*net.TCPConn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, c.(*net.TCPConn), up.(*net.TCPConn))
			mu.Unlock()
			go func() { io.Copy(up, c); up.Close() }()
			go func() { io.Copy(c, up); c.Close() }()
		}
	}()
	return ln.Addr().String(), func() {
		mu.Lock()
		defer mu.Unlock()
		for i, c := range conns {
			if i%2 == 0 { // the client's side
				c.SetLinger(0)
			}
			c.Close()
		}
		conns = nil
	}
}

// notSentCheck15 fails unless err says the capture was not sent.
func notSentCheck15(t *testing.T, what string, err error, op *inventory.Op) {
	t.Helper()
	if !errors.Is(err, ErrNotSent) || MaybeApplied(err) || !Retryable(op, err) {
		t.Errorf("%s: %v (maybe applied: %v); want ErrNotSent: no byte of it left", what, err, MaybeApplied(err))
	}
}

func TestAudit15ResetBeforeTheWriteIsNotSent(t *testing.T) {
	s := servertest.Start(t, servertest.Options{NoHTTP: true})
	g := inventory.GroupKey{SKU: "s", Condition: "new", Source: "own"}
	direct, err := New(Config{Addr: s.RESPAddr()})
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := direct.Stock(ctx, g.Row("w1"), 10, 1); err != nil {
		t.Fatal(err)
	}
	addr, reset := resetProxy(t, s.RESPAddr())
	capture := inventory.Capture(g, 1)

	// Conn.Do (what the cluster's router sends with).
	c, err := New(Config{Addr: addr, PoolSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cn, err := c.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := cn.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	reset()
	for !cn.peerClosed() { // the reset has reached the socket
		if ctx.Err() != nil {
			t.Fatal("the reset never reached the connection")
		}
		time.Sleep(time.Millisecond)
	}
	_, err = cn.Do(ctx, capture, nil)
	cn.Close()
	notSentCheck15(t, "Conn.Do on a reset connection", err, &capture)

	// The Batcher, handed the reset connection by the pool. (Seen
	// through a net.Conn that hides its socket, so that neither the
	// pool's check nor the Batcher's finds it reset first.)
	cn, err = c.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := cn.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	reset()
	cn.nc = struct{ net.Conn }{cn.nc}
	time.Sleep(10 * time.Millisecond) // the reset reaches the socket
	cn.Close()
	b := NewBatcher(c, 5*time.Second)
	_, err = b.Do(ctx, capture, nil)
	b.Close()
	notSentCheck15(t, "a Batcher's call on a reset connection", err, &capture)

	if res, err := direct.Available(ctx, g); err != nil || res.Count != 10 {
		t.Fatalf("available %d, %v; want 10: nothing was sent", res.Count, err)
	}
}

// cancelInWrite is a connection whose Write first cancels the caller's
// context and waits for the watch to set its past deadline: a
// cancellation that lands after begin and before the request is written.
type cancelInWrite struct {
	net.Conn
	cancel context.CancelFunc
	fired  chan struct{}
}

func (w *cancelInWrite) SetDeadline(t time.Time) error {
	err := w.Conn.SetDeadline(t)
	if !t.IsZero() && t.Before(time.Unix(2, 0)) { // the watch's
		close(w.fired)
	}
	return err
}

func (w *cancelInWrite) Write(b []byte) (int, error) {
	w.cancel()
	<-w.fired
	return w.Conn.Write(b)
}

func TestAudit15CancelBeforeTheWriteIsNotSent(t *testing.T) {
	s := servertest.Start(t, servertest.Options{NoHTTP: true})
	g := inventory.GroupKey{SKU: "s", Condition: "new", Source: "own"}
	c, err := New(Config{Addr: s.RESPAddr(), PoolSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	bg := context.Background()
	if _, err := c.Stock(bg, g.Row("w1"), 10, 1); err != nil {
		t.Fatal(err)
	}
	cn, err := c.Conn(bg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(bg)
	defer cancel()
	cn.nc = &cancelInWrite{Conn: cn.nc, cancel: cancel, fired: make(chan struct{})}
	capture := inventory.Capture(g, 1)
	_, err = cn.Do(ctx, capture, nil)
	cn.Close()
	notSentCheck15(t, "a capture whose context was cancelled before its write", err, &capture)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("%v: want it to say the context was cancelled", err)
	}
	if res, err := c.Available(bg, g); err != nil || res.Count != 10 {
		t.Fatalf("available %d, %v; want 10: nothing was sent", res.Count, err)
	}
}
