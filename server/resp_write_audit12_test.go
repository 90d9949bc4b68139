//go:build linux

package server

import (
	"bufio"
	"errors"
	"io"
	"net"
	runtimemetrics "runtime/metrics"
	"strings"
	"syscall"
	"testing"
	"time"

	"allot/engine"
)

// TestNonReadingClientsPinNoThreadAndAreClosed: clients send commands
// with large replies and never read. The server must wait for their
// sockets without an OS thread each (the loop's writes, and the rest of a
// direct reply in fsync mode, once waited in a blocking poll(2): a thread
// per such connection for ever, and Go's 10,000-thread limit is a fatal
// error with ConnectionsMax at 10,000), and close each of them once a
// write has waited writeTimeout (both modes once waited for ever).
//
// "pipelined": one write of 200 commands, in write mode (the round's
// replies wait for the socket); "one at a time": a command every 2 ms in
// fsync mode, each a round of one op that the flusher answers directly
// (resp_direct.go), the rest of a reply the socket did not take going
// from a goroutine of its own.
func TestNonReadingClientsPinNoThreadAndAreClosed(t *testing.T) {
	for _, mode := range []string{RESPIOGoroutine, RESPIOLoop} {
		t.Run(mode+"/pipelined", func(t *testing.T) { nonReadingRESPClients(t, mode, engine.DurabilityWrite, false) })
		t.Run(mode+"/one at a time", func(t *testing.T) { nonReadingRESPClients(t, mode, engine.DurabilityFsync, true) })
	}
}

func nonReadingRESPClients(t *testing.T, mode string, d engine.Durability, oneAtATime bool) {
	const (
		clients = 48
		timeout = time.Second
	)
	saved := writeTimeout
	writeTimeout = timeout
	t.Cleanup(func() { writeTimeout = saved }) // after the server's cleanup
	s, e := servedEngine(t, Config{RESPAddr: "127.0.0.1:0", RESPIO: mode}, d)

	setup, sr := dialRESP(t, s)
	setup.SetDeadline(time.Now().Add(10 * time.Second))
	setup.Write([]byte(bigHoldSetup))
	for i := range 66 {
		if _, err := readRESP(sr); err != nil {
			t.Fatalf("setup reply %d: %v", i, err)
		}
	}
	setup.Close()
	waitRESPConns(t, s, 0, 5*time.Second)

	threadsBefore, blockedBefore := respThreadCounts()
	// Small socket buffers on both sides, so that a few dozen replies fill
	// them: the client's receive buffer, and the server's send buffer once
	// the connection is accepted (autotuning would give it megabytes).
	dialer := net.Dialer{Control: func(_, _ string, raw syscall.RawConn) error {
		return raw.Control(func(fd uintptr) {
			syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		})
	}}
	conns := make([]net.Conn, clients)
	for i := range conns {
		nc, err := dialer.Dial("tcp", s.RESPAddr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { nc.Close() })
		conns[i] = nc
	}
	waitRESPConns(t, s, clients, 5*time.Second)
	s.mu.Lock()
	for c := range s.conns {
		shrinkRESPSendBuffer(t, c)
	}
	s.mu.Unlock()

	// Replies of about 6 KB each, far more than the sockets hold; the
	// clients never read.
	one := []byte(rawCommand("HOLD.GET", "big"))
	pipeline := []byte(strings.Repeat(string(one), 200))
	for _, nc := range conns {
		if !oneAtATime {
			go nc.Write(pipeline) // may wait for the server to read
			continue
		}
		go func() {
			for range 40 {
				if _, err := nc.Write(one); err != nil {
					return
				}
				time.Sleep(2 * time.Millisecond)
			}
		}()
	}
	// Wait until the server has stopped making progress: every connection
	// waits for its client.
	last, still := e.Stats().Requests, 0
	for deadline := time.Now().Add(10 * time.Second); still < 3 && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		if n := e.Stats().Requests; n == last {
			still++
		} else {
			last, still = n, 0
		}
	}
	threads, blocked := respThreadCounts()
	t.Logf("%d requests applied; threads %d -> %d, goroutines in a system call %d -> %d",
		last, threadsBefore, threads, blockedBefore, blocked)
	if blocked-blockedBefore >= clients/4 {
		t.Errorf("%d goroutines sit in a system call with %d clients not reading (was %d): each pins an OS thread",
			blocked, clients, blockedBefore)
	}
	if threads-threadsBefore >= clients/2 {
		t.Errorf("threads went from %d to %d with %d clients not reading", threadsBefore, threads, clients)
	}

	// Past the write timeout every one of them is closed.
	if open := waitRESPConns(t, s, 0, timeout+10*time.Second); open != 0 {
		t.Fatalf("%d of %d connections that never read are still open %v after the write timeout (%v)",
			open, clients, 10*time.Second, timeout)
	}
	// And the client sees its connection end.
	conns[0].SetReadDeadline(time.Now().Add(10 * time.Second))
	var ne net.Error
	if _, err := bufio.NewReader(conns[0]).WriteTo(io.Discard); errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the client's connection did not end: %v", err)
	}
}

// respThreadCounts returns the Go runtime's OS threads and the goroutines in
// a system call (each holds a thread while it is there).
func respThreadCounts() (threads, inSyscall uint64) {
	samples := []runtimemetrics.Sample{{Name: "/sched/threads/total:threads"}, {Name: "/sched/goroutines/not-in-go:goroutines"}}
	runtimemetrics.Read(samples)
	return samples[0].Value.Uint64(), samples[1].Value.Uint64()
}

// waitRESPConns waits up to d for the server to hold want connections, and
// returns how many it holds.
func waitRESPConns(t *testing.T, s *Server, want int, d time.Duration) int {
	t.Helper()
	var n int
	for deadline := time.Now().Add(d); ; time.Sleep(10 * time.Millisecond) {
		s.mu.Lock()
		n = len(s.conns)
		s.mu.Unlock()
		if n == want || time.Now().After(deadline) {
			return n
		}
	}
}

// shrinkRESPSendBuffer sets the server side's send buffer of c to a few KB.
// The caller holds s.mu (c's socket stays open meanwhile).
func shrinkRESPSendBuffer(t *testing.T, c *respConn) {
	set := func(fd uintptr) {
		if err := syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_SNDBUF, 4096); err != nil {
			t.Errorf("SO_SNDBUF: %v", err)
		}
	}
	if c.loop != nil {
		set(uintptr(c.fd))
		return
	}
	raw, err := c.nc.(syscall.Conn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	raw.Control(set)
}
