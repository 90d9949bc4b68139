package client

import (
	"context"
	"testing"
	"time"

	"allot/inventory"
	"allot/server"
	"allot/server/servertest"
)

// A Batcher keeps its connection between calls, outside the pool, so the
// pool's check of an idle connection (Client.Conn) never saw it: after
// the server restarted, the next call was written into the connection
// the old server had closed, and came back "unexpected EOF", its outcome
// unknown (MaybeApplied), although no server ever read it. An unkeyed
// capture then cannot be retried. The Batcher now checks its connection
// before it sends on it after a pause, as the pool does.
func TestAudit15BatcherDoesNotSendIntoAConnectionTheServerClosed(t *testing.T) {
	dir := t.TempDir()
	s := servertest.Start(t, servertest.Options{NoHTTP: true, Dir: dir})
	addr := s.RESPAddr()
	c, err := New(Config{Addr: addr})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	g := inventory.GroupKey{SKU: "s", Condition: "new", Source: "own"}
	if _, err := c.Stock(ctx, g.Row("w1"), 10, 1); err != nil {
		t.Fatal(err)
	}
	b := NewBatcher(c, 5*time.Second)
	defer b.Close()
	if res, err := b.Do(ctx, inventory.Capture(g, 1), nil); err != nil || res.Code != inventory.CodeOK {
		t.Fatalf("capture before the restart: %+v %v", res, err)
	}
	s.Stop()
	servertest.Start(t, servertest.Options{NoHTTP: true, Dir: dir, Config: server.Config{RESPAddr: addr}})
	res, err := b.Do(ctx, inventory.Capture(g, 1), nil)
	if err != nil {
		t.Fatalf("capture after the restart, through the batcher's connection to the old server: %v (maybe applied: %v)", err, MaybeApplied(err))
	}
	if res.Code != inventory.CodeOK {
		t.Fatalf("capture after the restart: %v", res.Code)
	}
	if res, err := c.Available(ctx, g); err != nil || res.Count != 8 {
		t.Fatalf("after 2 captures of 10: available %d, %v; want 8", res.Count, err)
	}
}
