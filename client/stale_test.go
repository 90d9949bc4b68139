package client_test

import (
	"context"
	"testing"
	"time"

	"allot/client"
	"allot/inventory"
	"allot/server"
	"allot/server/servertest"
)

// TestStalePooledConnectionAfterRestart: after the server restarted (a
// deploy, a node of a cluster starting a new term), the pool holds
// connections the old server closed. A write taken from the pool must not
// be sent into one of them: sent there, its outcome is unknown to the
// client (written, then the connection ended), although the server never
// read it, and a capture without an idempotency key cannot be retried. The
// client finds the closed connection before it sends.
func TestStalePooledConnectionAfterRestart(t *testing.T) {
	dir := t.TempDir()
	s := servertest.Start(t, servertest.Options{NoHTTP: true, Dir: dir})
	addr := s.RESPAddr()
	c := newClient(t, addr, client.Config{PoolSize: 4})
	ctx := context.Background()
	k := inventory.RowKey{SKU: "s", Warehouse: "w1", Condition: "new", Source: "own"}
	// Four connections in the pool, all idle.
	var conns []*client.Conn
	for range 4 {
		cn, err := c.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := cn.Ping(ctx); err != nil {
			t.Fatal(err)
		}
		conns = append(conns, cn)
	}
	for _, cn := range conns {
		cn.Close()
	}
	if _, err := c.Stock(ctx, k, 10, 1); err != nil {
		t.Fatal(err)
	}
	s.Stop()
	servertest.Start(t, servertest.Options{NoHTTP: true, Dir: dir, Config: server.Config{RESPAddr: addr}})
	for i := range 4 {
		res, err := c.Capture(ctx, inventory.GroupKey{SKU: "s", Condition: "new", Source: "own"}, 1, nil)
		if err != nil {
			t.Fatalf("capture %d after the restart, on the pool of the old server's connections: %v", i, err)
		}
		if res.Code != inventory.CodeOK {
			t.Fatalf("capture %d: %v", i, res.Code)
		}
	}
	if res, err := c.Get(ctx, k); err != nil || res.Count != 6 {
		t.Fatalf("after 4 captures of 10: count %d, %v; want 6", res.Count, err)
	}
}

// TestIdleConnectionPastItsDeadlineIsReused: the check of an idle
// connection must not take the read deadline the last request left on it,
// past by now, for a closed connection: the pool would then dial again
// after every pause longer than a caller's timeout.
func TestIdleConnectionPastItsDeadlineIsReused(t *testing.T) {
	s := servertest.Start(t, servertest.Options{NoHTTP: true})
	c := newClient(t, s.RESPAddr(), client.Config{PoolSize: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	cn, err := c.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := cn.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	cn.Close()
	cancel()
	time.Sleep(100 * time.Millisecond) // idle past the deadline
	again, err := c.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if again != cn {
		t.Fatal("the pool dialled a new connection: the idle one was taken for closed")
	}
	if err := again.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
}
