package client_test

import (
	"bufio"
	"context"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"allot/client"
	"allot/inventory"
)

// scripted is a RESP listener that answers the n-th command it reads (over
// all its connections, from 1) with reply(n): a node of a cluster in the
// middle of a failover, as the client sees it.
type scripted struct {
	ln       net.Listener
	commands atomic.Int32
	reply    atomic.Value // func(n int32) string
}

// listen serves every connection to a new loopback listener with serve,
// each on a goroutine of its own, until the test ends.
func listen(t *testing.T, serve func(net.Conn)) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			go serve(nc)
		}
	}()
	return ln
}

func startScripted(t *testing.T) *scripted {
	t.Helper()
	s := &scripted{}
	s.ln = listen(t, s.serve)
	return s
}

func (s *scripted) addr() string { return s.ln.Addr().String() }

func (s *scripted) serve(nc net.Conn) {
	defer nc.Close()
	br := bufio.NewReader(nc)
	for {
		line, err := br.ReadString('\n')
		if err != nil || !strings.HasPrefix(line, "*") {
			return
		}
		n, _ := strconv.Atoi(strings.TrimSpace(line[1:]))
		for range 2 * n { // $len and the argument
			if _, err := br.ReadString('\n'); err != nil {
				return
			}
		}
		reply := s.reply.Load().(func(int32) string)
		if _, err := nc.Write([]byte(reply(s.commands.Add(1)))); err != nil {
			return
		}
	}
}

// TestDoWaitsOutAnElection: a standby names a primary that refuses too
// (the failover is under way): the client follows with a growing pause
// and succeeds once a primary answers; with no primary it gives up after
// RetriesMax pauses, not at once (which made a bench spin through
// hundreds of thousands of refusals during a failover).
func TestDoWaitsOutAnElection(t *testing.T) {
	a, b := startScripted(t), startScripted(t)
	refuse := func(addr string) string { return "-UNAVAILABLE not primary, primary at " + addr + "\r\n" }
	a.reply.Store(func(int32) string { return refuse(b.addr()) })
	row := inventory.RowKey{SKU: "s", Warehouse: "w", Condition: "new", Source: "retail"}
	ctx := context.Background()

	t.Run("a primary comes", func(t *testing.T) {
		b.commands.Store(0)
		b.reply.Store(func(n int32) string {
			if n < 3 {
				return refuse(b.addr()) // b is not primary yet, and says it will be
			}
			return "+OK\r\n"
		})
		c := newClient(t, a.addr(), client.Config{})
		start := time.Now()
		res, err := c.Stock(ctx, row, 1, 1)
		if err != nil || res.Code != inventory.CodeOK {
			t.Fatalf("Stock during an election: %+v, %v", res, err)
		}
		if got := b.commands.Load(); got != 3 {
			t.Errorf("the primary named got %d commands, want 3", got)
		}
		if d := time.Since(start); d < 5*client.RetryPause {
			t.Errorf("done in %v: the refusals were not paced (want at least %v)", d, 5*client.RetryPause)
		}
	})
	t.Run("no primary", func(t *testing.T) {
		b.commands.Store(0)
		b.reply.Store(func(int32) string { return refuse(a.addr()) })
		c := newClient(t, a.addr(), client.Config{})
		start := time.Now()
		_, err := c.Stock(ctx, row, 1, 1)
		if _, ok := client.PrimaryOf(err); !ok {
			t.Fatalf("with no primary: %v, want the last refusal", err)
		}
		if d := time.Since(start); d < 5*client.RetryPause {
			t.Errorf("gave up after %v: the refusals were not paced", d)
		}
		if n := a.commands.Load() + b.commands.Load(); n > 20 {
			t.Errorf("%d commands sent for one op", n)
		}
	})
}
