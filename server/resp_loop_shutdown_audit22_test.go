//go:build linux

package server

import (
	"bufio"
	"context"
	"net"
	"testing"
	"time"

	"allot/engine"
)

// Shutdown returns only once the event loop has returned: nothing of the
// server runs after it, and the loop's epoll set and eventfd are closed.
// It returned once the last connection was gone, while the loop was still
// on its way out (the race detector saw Shutdown's caller and the loop's
// last steps unordered); the hook holds the loop there for a while.
func TestAudit22ShutdownWaitsForTheLoop(t *testing.T) {
	testLoopExitHook = func() { time.Sleep(200 * time.Millisecond) }
	t.Cleanup(func() { testLoopExitHook = nil })
	e, err := engine.Open(engine.Config{Dir: t.TempDir(), Durability: engine.DurabilityWrite})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	s, err := New(Config{RESPAddr: "127.0.0.1:0", RESPIO: RESPIOLoop}, e)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve() }()
	nc, err := net.Dial("tcp", s.RESPAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, err := nc.Write([]byte("PING\r\n")); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(nc).ReadString('\n'); err != nil || line != "+PONG\r\n" {
		t.Fatalf("PING: %q, %v", line, err)
	}
	s.mu.Lock()
	loop := s.loop
	s.mu.Unlock()
	if loop == nil {
		t.Fatal("no event loop")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-loop.done:
	default:
		t.Fatal("Shutdown returned while the RESP event loop was still running")
	}
	if err := <-served; err != nil {
		t.Fatal(err)
	}
}
