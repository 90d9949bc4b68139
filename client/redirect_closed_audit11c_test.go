package client

import (
	"bufio"
	"context"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"allot/inventory"
)

// respServer answers each RESP request with reply(n), n counting the
// requests of all its connections.
func respServer(t *testing.T, reply func(n int64) string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var count atomic.Int64
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer nc.Close()
				rd := bufio.NewReader(nc)
				for {
					h, err := rd.ReadString('\n')
					if err != nil || !strings.HasPrefix(h, "*") {
						return
					}
					n, _ := strconv.Atoi(strings.TrimSpace(h[1:]))
					for range 2 * n {
						if _, err := rd.ReadString('\n'); err != nil {
							return
						}
					}
					if _, err := nc.Write([]byte(reply(count.Add(1)))); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// TestRedirectClosedPoolIsRetried: a redirect to another primary closes
// the pool of the one before, which other goroutines may have just
// taken; their unkeyed mutations got "client: closed", not retried,
// though nothing was sent.
func TestRedirectClosedPoolIsRetried(t *testing.T) {
	ok := func(int64) string { return "+OK\r\n" }
	p1, p2 := respServer(t, ok), respServer(t, ok)
	standby := respServer(t, func(n int64) string {
		a := p1
		if n%2 == 0 {
			a = p2
		}
		return "-UNAVAILABLE not primary, primary at " + a + "\r\n"
	})
	c, err := New(Config{Addr: standby, PoolSize: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var wg sync.WaitGroup
	var fails atomic.Int64
	var first atomic.Value
	k := inventory.RowKey{SKU: "a", Warehouse: "w", Condition: "new", Source: "s"}
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 300 {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				res, err := c.Do(ctx, inventory.Stock(k, 1, 1), nil)
				cancel()
				if err != nil || res.Code != inventory.CodeOK {
					if fails.Add(1) == 1 {
						first.Store(res.Code.String() + " " + errString(err))
					}
				}
			}
		}()
	}
	wg.Wait()
	if n := fails.Load(); n > 0 {
		t.Fatalf("%d of 2400 stocks failed, first: %v", n, first.Load())
	}
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}
