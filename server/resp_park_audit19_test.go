//go:build linux

package server

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"allot/engine"
	"allot/inventory"
)

// parkServer starts a RESP loop server on an fsync engine whose frames
// end when the test flushes, with one row stocked; it counts the loop's
// epoll_ctl calls and the events it takes.
func parkServer(t *testing.T) (*engine.Engine, *Server, *atomic.Int64, *atomic.Int64) {
	t.Helper()
	var ctls, events atomic.Int64
	testEpollCtlHook = func(int) { ctls.Add(1) }
	testEventHook = func(int32) { events.Add(1) }
	t.Cleanup(func() { testEpollCtlHook, testEventHook = nil, nil })
	e, err := engine.Open(engine.Config{Dir: t.TempDir(), Durability: engine.DurabilityFsync, ManualFlush: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	s, err := New(Config{RESPAddr: "127.0.0.1:0", RESPIO: RESPIOLoop}, e)
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve()
	t.Cleanup(func() {
		// The disk goes on, so that a round a failed test left parked
		// does not hold the shutdown.
		stop := make(chan struct{})
		flushed := flushEvery(e, stop)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s.Shutdown(ctx)
		close(stop)
		<-flushed
	})
	stockFlushed(t, e)
	return e, s, &ctls, &events
}

// stockFlushed stocks row g/w/new/retail with 0 units at price 1 on an
// engine whose frames end when the caller flushes (Config.ManualFlush).
func stockFlushed(t *testing.T, e *engine.Engine) {
	t.Helper()
	stocked := make(chan error, 1)
	go func() {
		_, err := e.Stock(inventory.RowKey{SKU: "g", Warehouse: "w", Condition: "new", Source: "retail"}, 0, 1)
		stocked <- err
	}()
	for len(stocked) == 0 {
		e.Flush()
		time.Sleep(time.Millisecond)
	}
	if err := <-stocked; err != nil {
		t.Fatal(err)
	}
}

// TestParkedRoundsKeepTheirSocketWatched: a client that sends a pipeline
// and waits for its replies before the next, in fsync mode, costs the
// loop no epoll_ctl a round: the round parks until the disk, and the
// socket of a parked connection stays in the epoll set (it took two a
// round, out and back in). A round of one command is answered by the
// flusher directly and never parks, so each round here has two.
func TestParkedRoundsKeepTheirSocketWatched(t *testing.T) {
	e, s, ctls, _ := parkServer(t)
	nc, br := dialRESP(t, s)
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := nc.Write([]byte(rawCommand("PING"))); err != nil {
		t.Fatal(err)
	}
	if v, err := readRESP(br); err != nil || v != "+PONG\r\n" {
		t.Fatalf("PING: %q, %v", v, err)
	}
	before := ctls.Load()
	const rounds = 20
	release := rawCommand("RELEASE", "g", "w", "new", "retail", "1")
	for i := 1; i <= rounds; i++ {
		if _, err := nc.Write([]byte(release + release)); err != nil {
			t.Fatal(err)
		}
		stop := make(chan struct{})
		flushed := flushEvery(e, stop)
		for j := 2*i - 1; j <= 2*i; j++ {
			v, err := readRESP(br)
			if err != nil {
				t.Fatalf("round %d: %v", i, err)
			}
			if want := ":" + itoa(j) + "\r\n"; v != want {
				t.Fatalf("round %d: %q, want %q", i, v, want)
			}
		}
		close(stop)
		<-flushed
	}
	if n := ctls.Load() - before; n != 0 {
		t.Fatalf("%d rounds of two commands each made %d epoll_ctl calls, want 0", rounds, n)
	}
}

// TestParkedSocketReadableIsTakenOut: a client that sends more while its
// round is parked has its socket taken out of the (level-triggered) set
// at the first event, not woken on again and again until the round's
// replies are out; what it sent is served after them.
func TestParkedSocketReadableIsTakenOut(t *testing.T) {
	e, s, _, events := parkServer(t)
	nc, br := dialRESP(t, s)
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(20 * time.Second))
	release := rawCommand("RELEASE", "g", "w", "new", "retail", "1")
	if _, err := nc.Write([]byte(release + release)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // the round parks, waiting for the disk
	before := events.Load()
	if _, err := nc.Write([]byte(release)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // a loop woken on and on takes thousands of events here
	if n := events.Load() - before; n > 10 {
		t.Fatalf("the loop took %d events while a parked connection's socket was readable, want at most 10 (the socket's one, and any of the loop's wake-up)", n)
	}
	stop := make(chan struct{})
	flushed := flushEvery(e, stop)
	defer func() { close(stop); <-flushed }()
	for i, want := range []string{":1\r\n", ":2\r\n", ":3\r\n"} {
		v, err := readRESP(br)
		if err != nil {
			t.Fatalf("reply %d: %v", i+1, err)
		}
		if v != want {
			t.Fatalf("reply %d: %q, want %q", i+1, v, want)
		}
	}
	if !strings.HasPrefix(within(t, s, rawCommand("PING"), 5*time.Second), "+PONG") {
		t.Fatal("PING after the parked rounds was not answered")
	}
}

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			break
		}
	}
	return string(b[i:])
}
