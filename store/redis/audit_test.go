package redis

import (
	"context"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"allot/inventory"
	"allot/services/servicestest"
	"allot/store"
	"allot/store/storetest"
)

// cutProxy forwards TCP connections to the project's Redis. Once armed,
// it swallows the next reply the server sends and closes that connection:
// the server applied the command, the client never hears of it. That is a
// lost connection, whose outcome the Store contract calls unknown.
type cutProxy struct {
	ln    net.Listener
	armed atomic.Bool
	cuts  atomic.Int64
	wg    sync.WaitGroup
}

func startCutProxy(t *testing.T) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", AddrDefault)
			if err != nil {
				c.Close()
				continue
			}
			p.wg.Add(2)
			go func() { defer p.wg.Done(); io.Copy(s, c); s.Close() }()
			go func() {
				defer p.wg.Done()
				defer c.Close()
				defer s.Close()
				buf := make([]byte, 64<<10)
				for {
					n, err := s.Read(buf)
					if n > 0 {
						if p.armed.CompareAndSwap(true, false) {
							p.cuts.Add(1)
							return
						}
						if _, werr := c.Write(buf[:n]); werr != nil {
							return
						}
					}
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(func() { ln.Close(); p.wg.Wait() })
	return p
}

// A capture or release whose reply is lost with its connection must not
// be sent again behind the caller's back: the server already applied it,
// and a second EVALSHA takes (or gives) the units twice while the caller
// is told once. go-redis retries a command after io.EOF three times by
// default; the adapter must turn that off and report the unknown outcome.
func TestLostReplyIsNotAppliedTwice(t *testing.T) {
	servicestest.Require(t, "redis")
	ctx := context.Background()
	g := inventory.GroupKey{SKU: "audit-retry", Condition: "new", Source: "own"}
	row := g.Row("w1")
	const initial = 10
	for _, tc := range []struct {
		name string
		op   func(se store.Session) (inventory.Result, error)
		// applied is the count after one application of the op.
		applied int64
	}{
		{"capture", func(se store.Session) (inventory.Result, error) { return se.Capture(ctx, g, 1, nil) }, initial - 1},
		{"release", func(se store.Session) (inventory.Result, error) { return se.Release(ctx, row, 1) }, initial + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := startCutProxy(t)
			st, err := store.Open(ctx, "redis", store.Config{Durability: store.DurabilityWrite, Addr: p.ln.Addr().String()})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			if err := st.Load(ctx, []inventory.Row{{Key: row, Count: initial, Price: 1}}); err != nil {
				t.Fatal(err)
			}
			se, err := st.Session(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer se.Close()
			p.armed.Store(true)
			res, opErr := tc.op(se)
			if p.cuts.Load() != 1 {
				t.Fatalf("the proxy cut %d replies, want 1", p.cuts.Load())
			}
			got := rowMap(t, st)[row].Count
			switch {
			case got != tc.applied && got != initial:
				t.Fatalf("%s with its reply lost: the row holds %d, want %d (applied once) or %d (not applied); op result %v, error %v",
					tc.name, got, tc.applied, initial, res, opErr)
			case opErr == nil:
				t.Fatalf("%s with its reply lost answered %v without an error: the adapter sent it again, and the row holds %d", tc.name, res, got)
			}
		})
	}
}

func TestCancelPastDeadlineExpires(t *testing.T) { storetest.RunCancelPastDeadline(t, open) }
