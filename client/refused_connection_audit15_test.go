package client

import (
	"context"
	"errors"
	"testing"
	"time"

	"allot/inventory"
	"allot/server"
	"allot/server/servertest"
)

// A server at its --connections-max answers a new connection with
// "-ERR max number of clients reached" and closes it, having read
// nothing. Do and the catalog commands take that for a refusal and drop
// the connection (audit 11c, 13); the tests below are the paths that did
// not.

// fullServer starts a server that takes one RESP connection, and holds
// that one open; stock is 10 units of group g at w1.
func fullServer(t *testing.T, g inventory.GroupKey) (addr string, free func()) {
	return fullServerPassword(t, g, "")
}

// fullServerPassword is fullServer with a server that requires password
// (none: "").
func fullServerPassword(t *testing.T, g inventory.GroupKey, password string) (addr string, free func()) {
	t.Helper()
	s := servertest.Start(t, servertest.Options{NoHTTP: true, Config: server.Config{ConnectionsMax: 1, Password: password}})
	holder, err := New(Config{Addr: s.RESPAddr(), PoolSize: 1, Password: password})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { holder.Close() })
	ctx := context.Background()
	held, err := holder.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Reachable until the test ends: the collector's finalizer would
	// close its socket, and give the server room, under a test that
	// dropped free.
	t.Cleanup(func() { held.Close() })
	if res, err := held.Stock(ctx, g.Row("w1"), 10, 1); err != nil || res.Code != inventory.CodeOK {
		t.Fatalf("stock: %+v %v", res, err)
	}
	return s.RESPAddr(), func() { held.Close(); holder.Close() }
}

// refusal reports whether err is the server's refusal of the connection:
// not applied, and retryable for any op.
func refusal(err error, op *inventory.Op) bool {
	var se *ServerError
	return errors.As(err, &se) && se.Msg == maxClientsReply && errors.Is(err, ErrUnavailable) && !MaybeApplied(err) && Retryable(op, err)
}

// Hello, Changes and Ping took the refusal for a reply: Hello and
// Changes returned it as an error of no class and gave the connection,
// which the server had closed, back to the pool; Ping called it an
// unexpected reply. The capture that came next on the client was written
// into the closed connection and came back with an unknown outcome
// (write: broken pipe), although no server ever read it, so an unkeyed
// caller could not retry it. Now each is a refusal and the connection is
// dropped: the capture is dialled anew, refused in turn, and says so.
func TestAudit15HelloChangesPingRefusedConnection(t *testing.T) {
	g := inventory.GroupKey{SKU: "s", Condition: "new", Source: "own"}
	addr, _ := fullServer(t, g)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	capture := inventory.Capture(g, 1)
	for _, tc := range []struct {
		name string
		call func(c *Client) error
	}{
		{"HELLO", func(c *Client) error { _, err := c.Hello(ctx); return err }},
		{"CHANGES", func(c *Client) error { _, err := c.Changes(ctx, 0, 1, 0); return err }},
		{"PING", func(c *Client) error { return c.Ping(ctx) }},
		{"PING pipeline", func(c *Client) error {
			cn, err := c.Conn(ctx)
			if err != nil {
				return err
			}
			defer cn.Close()
			return cn.PingPipeline(ctx, 3)
		}},
	} {
		c, err := New(Config{Addr: addr, PoolSize: 1})
		if err != nil {
			t.Fatal(err)
		}
		err = tc.call(c)
		if !refusal(err, &capture) {
			t.Errorf("%s: %v; want the server's refusal (a *ServerError of ErrUnavailable)", tc.name, err)
		}
		_, err = c.Do(ctx, capture, nil)
		if !refusal(err, &capture) {
			t.Errorf("capture after %s: %v (maybe applied: %v); want the server's refusal: it read nothing", tc.name, err, MaybeApplied(err))
		}
		c.Close()
	}
}

// A pipeline whose first reply is the refusal of the connection was
// reported as a *PipelineRefusal, of unknown outcome, as if the server
// had answered its other ops on their own: it read none of them. The
// catalog pipelines report it as a refusal (audit 13); Pipeline now does
// too.
func TestAudit15PipelineRefusedConnection(t *testing.T) {
	g := inventory.GroupKey{SKU: "s", Condition: "new", Source: "own"}
	addr, _ := fullServer(t, g)
	c, err := New(Config{Addr: addr, PoolSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ops := []inventory.Op{inventory.Capture(g, 1), inventory.Capture(g, 2), inventory.Capture(g, 3)}
	err = c.Pipeline(context.Background(), ops, make([]inventory.Result, len(ops)))
	if !refusal(err, &ops[0]) {
		t.Fatalf("a pipeline refused with its connection: %v (maybe applied: %v); want the server's refusal", err, MaybeApplied(err))
	}
}

// The Batcher gave the refused call its refusal but kept the connection
// the server had closed after it, and wrote its next pipeline there: the
// next call came back with an unknown outcome (broken pipe), though the
// server read nothing and had room again. Now the refusal ends the
// connection and the next pipeline goes on a new one.
func TestAudit15BatcherRefusedConnectionIsNotReused(t *testing.T) {
	g := inventory.GroupKey{SKU: "s", Condition: "new", Source: "own"}
	addr, free := fullServer(t, g)
	c, err := New(Config{Addr: addr})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	b := NewBatcher(c, 5*time.Second)
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	capture := inventory.Capture(g, 1)
	if _, err := b.Do(ctx, capture, nil); !refusal(err, &capture) {
		t.Fatalf("a call on a full server: %v; want the server's refusal", err)
	}
	free()
	// The server frees the held connection's slot in its own time: until
	// then a call is refused again, never of unknown outcome.
	for {
		res, err := b.Do(ctx, capture, nil)
		if err == nil {
			if res.Code != inventory.CodeOK {
				t.Fatalf("capture: %v", res.Code)
			}
			break
		}
		if !refusal(err, &capture) {
			t.Fatalf("a call after the refusal: %v (maybe applied: %v); want its reply, or a refusal while the server is full", err, MaybeApplied(err))
		}
		if ctx.Err() != nil {
			t.Fatalf("no room on the server 30 s after the held connection closed: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Read on the batcher's connection: the server's only one.
	if res, err := b.Do(ctx, inventory.Available(g), nil); err != nil || res.Count != 9 {
		t.Fatalf("available %d, %v; want 9: one capture applied", res.Count, err)
	}
}

// With a password, the refusal is the reply to the AUTH a new connection
// sends first. dial returned it as a *ServerError of no class, as it
// does WRONGPASS: not a refusal, so Client.Do did not retry it (nor did
// the cluster's router, by Retryable), and errors.Is(err,
// ErrUnavailable) was false, where the same server without a password
// gets a retried refusal.
func TestAudit15AuthRefusedConnection(t *testing.T) {
	g := inventory.GroupKey{SKU: "s", Condition: "new", Source: "own"}
	addr, free := fullServerPassword(t, g, "s3cret")
	c, err := New(Config{Addr: addr, Password: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	capture := inventory.Capture(g, 1)
	if _, err := c.Do(ctx, capture, nil); !refusal(err, &capture) {
		t.Fatalf("a capture on a full server that requires a password: %v; want the server's refusal", err)
	}
	b := NewBatcher(c, 5*time.Second)
	defer b.Close()
	if _, err := b.Do(ctx, capture, nil); !refusal(err, &capture) {
		t.Fatalf("a Batcher's capture on a full server that requires a password: %v; want the server's refusal", err)
	}
	// Refused, so retried: with room again, a call goes through.
	free()
	for {
		res, err := c.Do(ctx, capture, nil)
		if err == nil {
			if res.Code != inventory.CodeOK {
				t.Fatalf("capture: %v", res.Code)
			}
			break
		}
		if !refusal(err, &capture) {
			t.Fatalf("a capture after the refusal: %v; want its reply, or a refusal while the server is full", err)
		}
		if ctx.Err() != nil {
			t.Fatalf("no room on the server 30 s after the held connection closed: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if res, err := c.Available(ctx, g); err != nil || res.Count != 9 {
		t.Fatalf("available %d, %v; want 9: one capture applied", res.Count, err)
	}
}
