package client

import (
	"bufio"
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"allot/inventory"
)

// lineServer answers each connection with reply (after reading a
// request line) and closes it.
func lineServer(t *testing.T, reply string) (addr string, accepted *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	accepted = new(atomic.Int64)
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			go func() {
				defer nc.Close()
				nc.SetDeadline(time.Now().Add(5 * time.Second))
				bufio.NewReader(nc).ReadString('\n')
				nc.Write([]byte(reply))
			}()
		}
	}()
	return ln.Addr().String(), accepted
}

// TestServerRefusalsAreNotInvalid: "-ERR max number of clients reached"
// (the server over its connection limit, which then closes the
// connection) and "-ERR Protocol error" are refusals of the connection,
// not of the request: the caller got CodeInvalid with a nil error (fix
// your request), and the closed connection went back to the pool.
func TestServerRefusalsAreNotInvalid(t *testing.T) {
	for _, reply := range []string{"-ERR max number of clients reached\r\n", "-ERR Protocol error: invalid multibulk length\r\n"} {
		addr, accepted := lineServer(t, reply)
		c, err := New(Config{Addr: addr, PoolSize: 1})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		res, err := c.Do(ctx, inventory.Capture(inventory.GroupKey{SKU: "a", Condition: "new", Source: "s"}, 1), nil)
		cancel()
		if !errors.Is(err, ErrUnavailable) || MaybeApplied(err) {
			t.Fatalf("%q: %v %v; want a refusal (ErrUnavailable, not applied)", reply, res.Code, err)
		}
		// Retried on new connections: the refused one was not reused.
		if n := accepted.Load(); n != RetriesMax+1 {
			t.Fatalf("%q: %d connections for %d attempts; want a new one each", reply, n, RetriesMax+1)
		}
		c.Close()
	}
}
