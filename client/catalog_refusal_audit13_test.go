package client

import (
	"context"
	"errors"
	"testing"
	"time"

	"allot/catalog"
	"allot/inventory"
	"allot/server"
	"allot/server/servertest"
)

// A server at its --connections-max answers a new connection with
// "-ERR max number of clients reached" and closes it, having read
// nothing. The catalog commands took that for a reply: SEARCH (alone or
// pipelined) returned it as a plain error, neither a refusal nor
// retryable, CATALOG.SET, DEL and GET gave the closed connection back to
// the pool as usable (the next request on it failed in its write, its
// outcome unknown), and a pipeline of catalog sets read on past it and
// reported a lost connection. Each is now a refusal (ErrUnavailable: not
// applied, retryable), as Do's ops' is, and the connection is not used
// again.
//
// Each command waits until the refusal has reached its connection before
// it is sent: sent earlier, it lands on a socket the server closes
// unread, and the reset that follows can reach the client before the
// refusal does, which then never reads it (the server's close, not the
// client's reading).
func TestAudit13CatalogCommandsClassifyMaxClients(t *testing.T) {
	s := servertest.Start(t, servertest.Options{NoHTTP: true, Config: server.Config{ConnectionsMax: 1}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The one connection the server allows, held open.
	holder, err := New(Config{Addr: s.RESPAddr(), PoolSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	held, err := holder.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := held.Ping(ctx); err != nil {
		t.Fatal(err)
	}

	c, err := New(Config{Addr: s.RESPAddr()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rec := catalog.Record{SKU: "s1", Title: "Größe Jacke", Brand: "ACME"}
	q := catalog.Query{Prefix: "grö"}
	for _, tc := range []struct {
		name string
		op   inventory.Op // the op whose retry rule applies
		call func(cn *Conn) error
	}{
		{"CATALOG.SET", inventory.CatalogSet(rec), func(cn *Conn) error { return cn.CatalogSet(ctx, rec, "") }},
		{"CATALOG.DEL", inventory.CatalogDel("s1"), func(cn *Conn) error { _, err := cn.CatalogDel(ctx, "s1", ""); return err }},
		{"CATALOG.GET", inventory.CatalogGet("s1"), func(cn *Conn) error { _, _, err := cn.CatalogGet(ctx, "s1"); return err }},
		{"SEARCH", inventory.Search(q), func(cn *Conn) error { _, err := cn.Search(ctx, q, nil); return err }},
		{"SEARCH pipelined", inventory.Search(q), func(cn *Conn) error {
			return cn.SearchPipeline(ctx, []catalog.Query{q, q, q}, make([][]catalog.Result, 3))
		}},
		{"CATALOG.SET pipelined", inventory.CatalogSet(rec), func(cn *Conn) error {
			return cn.CatalogSetPipeline(ctx, []catalog.Record{rec, {SKU: "s2", Title: "t", Brand: "b"}})
		}},
	} {
		cn, err := c.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for !cn.peerClosed() {
			if ctx.Err() != nil {
				t.Fatalf("%s: the server's refusal never reached the connection", tc.name)
			}
			time.Sleep(time.Millisecond)
		}
		err = tc.call(cn)
		broken := cn.Err()
		cn.Close()
		var se *ServerError
		if !errors.As(err, &se) || se.Msg != maxClientsReply || !errors.Is(err, ErrUnavailable) || MaybeApplied(err) || !Retryable(&tc.op, err) {
			t.Errorf("%s: %v; want the server's refusal (a *ServerError of ErrUnavailable: not applied, retryable)", tc.name, err)
		}
		if broken == nil {
			t.Errorf("%s: the refused connection, which the server closed, is kept for the next request", tc.name)
		}
	}

	// Nothing was applied: once the held connection is gone (the server
	// notices it in its own time), the server has no record.
	held.Close()
	holder.Close()
	for {
		_, found, err := c.CatalogGet(ctx, "s1")
		if err == nil {
			if found {
				t.Fatal("a refused CATALOG.SET was applied")
			}
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("no room on the server 30 s after the held connection closed: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
