package client_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"allot/catalog"
	"allot/client"
	"allot/engine"
	"allot/inventory"
	"allot/server/servertest"
	"allot/vfs"
)

// TestCatalogWritesKeepTheirOutcomeClass: CATALOG.SET and CATALOG.DEL are
// journaled mutations like any other, so a failing fdatasync makes their
// outcome unknown and the fail-stop after it refuses them. Their errors
// must say so (errors.Is with ErrOutcomeUnknown, then ErrUnavailable), or
// a caller takes an applied write for a plain refusal.
func TestCatalogWritesKeepTheirOutcomeClass(t *testing.T) {
	fs := vfs.NewFaulty(vfs.NewMem())
	s := servertest.Start(t, servertest.Options{Dir: "/d", FS: fs, Durability: engine.DurabilityFsync, JournalMayFail: true, NoHTTP: true})
	c := newClient(t, s.RESPAddr(), client.Config{})
	ctx := context.Background()
	rec := catalog.Record{SKU: "sku-1", Title: "Red shoe", Brand: "Acme"}
	if err := c.CatalogSet(ctx, rec, ""); err != nil {
		t.Fatalf("catalog set: %v", err)
	}
	fs.FailSyncs(true)
	rec.Title = "Blue shoe"
	err := c.CatalogSet(ctx, rec, "")
	if !errors.Is(err, client.ErrOutcomeUnknown) || errors.Is(err, client.ErrUnavailable) {
		t.Fatalf("catalog set during a failing fdatasync: want ErrOutcomeUnknown, got %v", err)
	}
	fs.FailSyncs(false)
	if err := c.CatalogSet(ctx, rec, ""); !errors.Is(err, client.ErrUnavailable) {
		t.Fatalf("catalog set after the failure: want ErrUnavailable, got %v", err)
	}
	if _, err := c.CatalogDel(ctx, "sku-1", ""); !errors.Is(err, client.ErrUnavailable) {
		t.Fatalf("catalog del after the failure: want ErrUnavailable, got %v", err)
	}
}

// respCommands reads RESP commands from br and sends each one's first
// word to words, until the connection ends.
func respCommands(br *bufio.Reader, words chan<- string) {
	for {
		line, err := br.ReadString('\n')
		if err != nil || !strings.HasPrefix(line, "*") {
			return
		}
		n, _ := strconv.Atoi(strings.TrimSpace(line[1:]))
		word := ""
		for i := range 2 * n {
			arg, err := br.ReadString('\n')
			if err != nil {
				return
			}
			if i == 1 {
				word = strings.TrimSpace(arg)
			}
		}
		words <- word
	}
}

// heldReplies is a RESP server that reads len(replies) commands before it
// answers any, then answers them in order: a node that refuses the first
// request and applies the next (a batch refused while a replica was
// missing, the next one acknowledged; a standby promoted between two
// requests).
func heldReplies(t *testing.T, replies ...string) string {
	t.Helper()
	ln := listen(t, func(nc net.Conn) {
		defer nc.Close()
		words := make(chan string, len(replies))
		go respCommands(bufio.NewReader(nc), words)
		for range replies {
			select {
			case <-words:
			case <-time.After(5 * time.Second):
				return
			}
		}
		nc.Write([]byte(strings.Join(replies, "")))
		time.Sleep(time.Second) // then hang up, as a server that restarts
	})
	return ln.Addr().String()
}

// TestBatcherRefusalDoesNotSpreadToOtherCalls: two calls on the wire at
// once through a Batcher; the server refuses the first (-UNAVAILABLE:
// not applied) and applies the second. The second caller must get its
// reply, and must never be told "unavailable (not applied)" for a release
// the server applied: a caller would retry it and release twice.
func TestBatcherRefusalDoesNotSpreadToOtherCalls(t *testing.T) {
	addr := heldReplies(t, "-UNAVAILABLE replication: no quorum\r\n", ":7\r\n")
	c := newClient(t, addr, client.Config{})
	b := client.NewBatcher(c, 5*time.Second)
	defer b.Close()
	ctx := context.Background()
	var wg sync.WaitGroup
	var firstErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, firstErr = b.Do(ctx, inventory.Release(rowW1, 1), nil)
	}()
	// The first call is on the wire (the server holds its reply) before
	// the second is queued, so the two go out in order.
	time.Sleep(50 * time.Millisecond)
	res, err := b.Do(ctx, inventory.Release(rowW2, 1), nil)
	wg.Wait()
	if !errors.Is(firstErr, client.ErrUnavailable) {
		t.Errorf("the refused call: want ErrUnavailable, got %v", firstErr)
	}
	if errors.Is(err, client.ErrUnavailable) {
		t.Fatalf("the applied release is reported as not applied: %v", err)
	}
	if err != nil || res.Code != inventory.CodeOK || res.Count != 7 {
		t.Fatalf("the applied release: %+v, %v; want its reply, count 7", res, err)
	}
}

// TestPipelineRefusalIsNotTheWholePipelines: a pipeline whose first op
// the server applied and whose second it refused must not come back as
// "unavailable (not applied)": retrying the pipeline would apply the
// first op twice. Every reply is read (the stream is in step), so the
// ops that were answered have their results.
func TestPipelineRefusalIsNotTheWholePipelines(t *testing.T) {
	addr := heldReplies(t, ":7\r\n", "-UNAVAILABLE not primary, primary at 127.0.0.1:1\r\n", ":9\r\n")
	c := newClient(t, addr, client.Config{})
	ops := []inventory.Op{inventory.Release(rowW1, 1), inventory.Release(rowW2, 1), inventory.Release(rowW1, 2)}
	results := make([]inventory.Result, len(ops))
	err := c.Pipeline(context.Background(), ops, results)
	if err == nil {
		t.Fatal("a pipeline with a refused op: no error")
	}
	if errors.Is(err, client.ErrUnavailable) {
		t.Fatalf("a pipeline whose first op was applied is reported as not applied: %v", err)
	}
	if _, ok := client.PrimaryOf(err); ok {
		t.Fatalf("a pipeline whose first op was applied is redirected as a whole: %v", err)
	}
	if !errors.Is(err, client.ErrOutcomeUnknown) {
		t.Errorf("want ErrOutcomeUnknown for the pipeline, got %v", err)
	}
	if results[0].Code != inventory.CodeOK || results[0].Count != 7 {
		t.Errorf("the applied first op: %+v", results[0])
	}
}

// TestPipelineOfOneRefusedKeepsItsClass: a pipeline of a single refused
// op is that op's refusal: nothing was applied.
func TestPipelineOfOneRefusedKeepsItsClass(t *testing.T) {
	addr := heldReplies(t, "-UNAVAILABLE replication: no quorum\r\n")
	c := newClient(t, addr, client.Config{})
	ops := []inventory.Op{inventory.Release(rowW1, 1)}
	err := c.Pipeline(context.Background(), ops, make([]inventory.Result, 1))
	if !errors.Is(err, client.ErrUnavailable) {
		t.Fatalf("a pipeline of one refused op: want ErrUnavailable, got %v", err)
	}
}

// TestRedirectToABadAddressStaysRefused: a standby that names a primary
// the client cannot even address refused the mutation; the error must
// still say it was not applied, not turn into an error of unknown
// outcome that an unkeyed caller may never retry.
func TestRedirectToABadAddressStaysRefused(t *testing.T) {
	a := startScripted(t)
	a.reply.Store(func(int32) string { return "-UNAVAILABLE not primary, primary at no-port-here\r\n" })
	c := newClient(t, a.addr(), client.Config{})
	_, err := c.Stock(context.Background(), rowW1, 1, 1)
	if !errors.Is(err, client.ErrUnavailable) {
		t.Fatalf("a refusal naming a bad address: want ErrUnavailable, got %v", err)
	}
	if !strings.Contains(err.Error(), "no-port-here") {
		t.Errorf("the error does not name the address it could not follow: %v", err)
	}
}

// TestCatalogSetPipelineKeepsItsClass: a pipeline of catalog sets whose
// second reply is a refusal reports an unknown outcome (the first was
// applied), and a pipeline of one reports that record's class.
func TestCatalogSetPipelineKeepsItsClass(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		replies []string
		want    error
		not     error
	}{
		{[]string{"+OK\r\n", "-UNAVAILABLE replication: no quorum\r\n", "+OK\r\n"}, client.ErrOutcomeUnknown, client.ErrUnavailable},
		{[]string{"-UNAVAILABLE replication: no quorum\r\n"}, client.ErrUnavailable, client.ErrOutcomeUnknown},
		{[]string{"+OK\r\n", "-UNKNOWN engine: outcome unknown\r\n"}, client.ErrOutcomeUnknown, client.ErrUnavailable},
	} {
		addr := heldReplies(t, tc.replies...)
		c := newClient(t, addr, client.Config{})
		cn, err := c.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		recs := make([]catalog.Record, len(tc.replies))
		for i := range recs {
			recs[i] = catalog.Record{SKU: fmt.Sprint("s", i), Title: "t", Brand: "b"}
		}
		err = cn.CatalogSetPipeline(ctx, recs)
		cn.Close()
		if !errors.Is(err, tc.want) || errors.Is(err, tc.not) {
			t.Errorf("replies %q: got %v, want %v", tc.replies, err, tc.want)
		}
	}
}

// TestRetriedUnknownStaysUnknown: a keyed capture whose first attempt's
// reply is lost (the connection breaks after the request was read) is
// retried, and the retries are refused (-UNAVAILABLE). The first attempt
// may have been applied: the caller must be told the outcome is unknown,
// not the last refusal's "not applied".
func TestRetriedUnknownStaysUnknown(t *testing.T) {
	var conns atomic.Int32
	ln := listen(t, func(nc net.Conn) {
		defer nc.Close()
		words := make(chan string, 1)
		go respCommands(bufio.NewReader(nc), words)
		select {
		case <-words:
		case <-time.After(5 * time.Second):
			return
		}
		if conns.Add(1) == 1 {
			return // the request arrived; its reply never does
		}
		nc.Write([]byte("-UNAVAILABLE replication: no quorum\r\n"))
		time.Sleep(100 * time.Millisecond)
	})
	c := newClient(t, ln.Addr().String(), client.Config{})
	op := inventory.Capture(group, 1)
	op.IdempotencyKey = "k1"
	_, err := c.Do(context.Background(), op, nil)
	if !errors.Is(err, client.ErrOutcomeUnknown) || errors.Is(err, client.ErrUnavailable) {
		t.Fatalf("after a lost reply and refused retries (%d connections): %v, want ErrOutcomeUnknown", conns.Load(), err)
	}
	if conns.Load() < 2 {
		t.Fatalf("the capture was not retried (%d connections): the test proves nothing", conns.Load())
	}
}
