package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"reflect"
	"testing"
	"time"

	"allot/client"
	"allot/inventory"
	"allot/server"
	"allot/server/servertest"
)

var (
	group = inventory.GroupKey{SKU: "sku-1", Condition: "new", Source: "retail"}
	rowW1 = group.Row("w1")
	rowW2 = group.Row("w2")
)

func newClient(t *testing.T, addr string, cfg client.Config) *client.Client {
	t.Helper()
	cfg.Addr = addr
	c, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestOps(t *testing.T) {
	s := servertest.Start(t, servertest.Options{NoHTTP: true})
	c := newClient(t, s.RESPAddr(), client.Config{})
	ctx := context.Background()
	must := func(r inventory.Result, err error) inventory.Result {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := must(c.Stock(ctx, rowW2, 5, 100)); r.Code != inventory.CodeOK {
		t.Fatalf("stock: %+v", r)
	}
	must(c.Stock(ctx, rowW1, 1, 90))
	r := must(c.Capture(ctx, group, 3, nil))
	want := []inventory.Line{{Warehouse: "w1", Count: 1}, {Warehouse: "w2", Count: 2}}
	if r.Code != inventory.CodeOK || !reflect.DeepEqual(r.Lines, want) {
		t.Fatalf("capture: %+v, want lines %v", r, want)
	}
	if r := must(c.Capture(ctx, group, 4, nil)); r.Code != inventory.CodeInsufficient || r.Available != 3 {
		t.Fatalf("capture beyond stock: %+v", r)
	}
	if r := must(c.Release(ctx, rowW1, 2)); r.Code != inventory.CodeOK || r.Count != 2 {
		t.Fatalf("release: %+v", r)
	}
	if r := must(c.Release(ctx, group.Row("w9"), 2)); r.Code != inventory.CodeNotFound {
		t.Fatalf("release of an unknown row: %+v", r)
	}
	if r := must(c.Get(ctx, rowW2)); r.Code != inventory.CodeOK || r.Count != 3 || r.Price != 100 {
		t.Fatalf("get: %+v", r)
	}
	if r := must(c.Get(ctx, group.Row("w9"))); r.Code != inventory.CodeNotFound {
		t.Fatalf("get of an unknown row: %+v", r)
	}
	if r := must(c.Available(ctx, group)); r.Code != inventory.CodeOK || r.Count != 5 {
		t.Fatalf("available: %+v", r)
	}
	if r := must(c.Capture(ctx, inventory.GroupKey{SKU: "", Condition: "c", Source: "s"}, 1, nil)); r.Code != inventory.CodeInvalid || r.Detail != "sku is empty" {
		t.Fatalf("invalid capture: %+v", r)
	}
	if r := must(c.Release(ctx, rowW1, inventory.CountMax)); r.Code != inventory.CodeInvalid || r.Detail != "quantity must be an integer from 1 to 2147483647" {
		t.Fatalf("release of too many: %+v", r)
	}
	must(c.Stock(ctx, rowW1, inventory.CountMax, 1))
	if r := must(c.Release(ctx, rowW1, 1)); r.Code != inventory.CodeInvalid || r.Detail != "release would carry the count past 4611686018427387903" {
		t.Fatalf("overflowing release: %+v", r)
	}
	if err := c.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	info, err := c.Hello(ctx)
	if err != nil || info["server"] != "allot" || info["durability"] != "write" || info["proto"] != "2" {
		t.Fatalf("hello: %v %v", info, err)
	}
}

// TestPipelineMatchesSequential runs the same ops one by one on one server
// and pipelined on another: the results must agree.
func TestPipelineMatchesSequential(t *testing.T) {
	var ops []inventory.Op
	for i := range 3 {
		ops = append(ops, inventory.Stock(group.Row(fmt.Sprintf("w%d", i)), 4, 10))
	}
	for i := range 40 {
		switch i % 4 {
		case 0, 1:
			ops = append(ops, inventory.Capture(group, int64(i%5+1)))
		case 2:
			ops = append(ops, inventory.Release(group.Row(fmt.Sprintf("w%d", i%4)), 2))
		case 3:
			ops = append(ops, inventory.Get(group.Row(fmt.Sprintf("w%d", i%5))), inventory.Available(group))
		}
	}
	ctx := context.Background()
	one := newClient(t, servertest.Start(t, servertest.Options{NoHTTP: true}).RESPAddr(), client.Config{})
	var want []inventory.Result
	for _, op := range ops {
		r, err := one.Do(ctx, op, nil)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, r)
	}
	piped := newClient(t, servertest.Start(t, servertest.Options{NoHTTP: true}).RESPAddr(), client.Config{})
	got := make([]inventory.Result, len(ops))
	if err := piped.Pipeline(ctx, ops, got); err != nil {
		t.Fatal(err)
	}
	for i := range ops {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("op %d %+v: pipelined %+v, one by one %+v", i, ops[i], got[i], want[i])
		}
	}
}

func TestPoolBound(t *testing.T) {
	s := servertest.Start(t, servertest.Options{NoHTTP: true})
	c := newClient(t, s.RESPAddr(), client.Config{PoolSize: 2})
	ctx := context.Background()
	a, err := c.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := c.Conn(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a third connection with a pool of 2: %v, want a deadline error", err)
	}
	a.Close()
	third, err := c.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if third != a {
		t.Errorf("the pool dialed a new connection instead of reusing the idle one")
	}
	third.Close()
	b.Close()
}

func TestAuth(t *testing.T) {
	s := servertest.Start(t, servertest.Options{NoHTTP: true, Config: server.Config{Password: "s3cret"}})
	ctx := context.Background()
	var se *client.ServerError
	_, err := newClient(t, s.RESPAddr(), client.Config{}).Available(ctx, group)
	if !errors.As(err, &se) || se.Msg != "NOAUTH Authentication required." {
		t.Fatalf("no password: %v", err)
	}
	err = newClient(t, s.RESPAddr(), client.Config{Password: "wrong"}).Ping(ctx)
	if !errors.As(err, &se) || se.Msg != "WRONGPASS invalid username-password pair or user is disabled." {
		t.Fatalf("wrong password: %v", err)
	}
	if err := newClient(t, s.RESPAddr(), client.Config{Password: "s3cret"}).Ping(ctx); err != nil {
		t.Fatalf("right password: %v", err)
	}
}

func TestContextEndsRoundTrip(t *testing.T) {
	s := servertest.Start(t, servertest.Options{NoHTTP: true})
	c := newClient(t, s.RESPAddr(), client.Config{PoolSize: 1})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Available(ctx, group); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled context: %v", err)
	}
	// The pool is still usable.
	if err := c.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestServerGone(t *testing.T) {
	s := servertest.Start(t, servertest.Options{NoHTTP: true})
	c := newClient(t, s.RESPAddr(), client.Config{PoolSize: 1})
	ctx := context.Background()
	cn, err := c.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s.Stop()
	if _, err := cn.Available(ctx, group); err == nil {
		t.Fatal("an op on a stopped server succeeded")
	}
	if cn.Err() == nil {
		t.Fatal("the connection is not marked broken")
	}
	cn.Close()
	if err := c.Ping(ctx); err == nil {
		t.Fatal("ping to a stopped server succeeded")
	}
}

func TestPipelineDoesNotAllocate(t *testing.T) {
	s := servertest.Start(t, servertest.Options{NoHTTP: true, Durability: "none"})
	c := newClient(t, s.RESPAddr(), client.Config{})
	ctx := context.Background()
	if _, err := c.Stock(ctx, rowW1, 1<<40, 1); err != nil {
		t.Fatal(err)
	}
	cn, err := c.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cn.Close()
	ops := make([]inventory.Op, 64)
	for i := range ops {
		ops[i] = inventory.Capture(group, 1)
		if i%2 == 1 {
			ops[i] = inventory.Release(rowW1, 1)
		}
	}
	results := make([]inventory.Result, len(ops))
	if err := cn.Pipeline(ctx, ops, results); err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(20, func() {
		if err := cn.Pipeline(ctx, ops, results); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 0 {
		t.Fatalf("a pipeline of %d ops allocated %.1f times", len(ops), allocs)
	}
}

// TestPipelineReusedResults reuses one results slice for pipelines of
// different shapes: a release answered in a slot that held a capture must
// not show that capture's lines.
func TestPipelineReusedResults(t *testing.T) {
	s := servertest.Start(t, servertest.Options{NoHTTP: true})
	c := newClient(t, s.RESPAddr(), client.Config{})
	ctx := context.Background()
	if _, err := c.Stock(ctx, rowW1, 10, 1); err != nil {
		t.Fatal(err)
	}
	results := make([]inventory.Result, 2)
	if err := c.Pipeline(ctx, []inventory.Op{inventory.Capture(group, 1), inventory.Release(rowW1, 1)}, results); err != nil {
		t.Fatal(err)
	}
	if err := c.Pipeline(ctx, []inventory.Op{inventory.Release(rowW1, 1), inventory.Capture(group, 20)}, results); err != nil {
		t.Fatal(err)
	}
	if len(results[0].Lines) != 0 || results[0].Count != 11 {
		t.Errorf("release in a reused slot: %+v", results[0])
	}
	if results[1].Code != inventory.CodeInsufficient || len(results[1].Lines) != 0 || results[1].Available != 11 {
		t.Errorf("insufficient capture in a reused slot: %+v", results[1])
	}
}

// TestCancelInterruptsAWait: a server that never answers; cancelling the
// context ends the call.
func TestCancelInterruptsAWait(t *testing.T) {
	ln := listen(t, func(nc net.Conn) { io.Copy(io.Discard, nc); nc.Close() }) // read, never answer
	c := newClient(t, ln.Addr().String(), client.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	if _, err := c.Available(ctx, group); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled wait: %v, want context.Canceled", err)
	}
}

// TestContextCancelledWhileIdle: a connection watched a context that was
// cancelled while the connection sat in the pool; the next call with
// another context works.
func TestContextCancelledWhileIdle(t *testing.T) {
	s := servertest.Start(t, servertest.Options{NoHTTP: true})
	c := newClient(t, s.RESPAddr(), client.Config{PoolSize: 1})
	ctx1, cancel := context.WithCancel(context.Background())
	if _, err := c.Available(ctx1, group); err != nil {
		t.Fatal(err)
	}
	cancel()
	time.Sleep(10 * time.Millisecond)
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	for range 3 {
		if _, err := c.Available(ctx2, group); err != nil {
			t.Fatalf("after the first context ended: %v", err)
		}
	}
	cancel2()
	time.Sleep(10 * time.Millisecond)
	// A context that cannot end must also clear what the last one left.
	if _, err := c.Available(context.Background(), group); err != nil {
		t.Fatalf("with a background context after a cancelled one: %v", err)
	}
}
