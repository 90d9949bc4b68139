package server

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

	"allot/catalog"
	"allot/engine"
	"allot/inventory"
)

// respPipeConn is a net.Conn whose client sends a pipeline rounds times,
// each copy once the server has read the whole previous one (as a client
// that waits for its replies does: the server reads again only once it has
// written every reply of what it read), in reads of whatever size the
// server asks; then io.EOF. onRead, when set, runs as a copy begins;
// onWrite, when set, sees every write.
type respPipeConn struct {
	pipeline []byte
	rounds   int
	off      int
	written  int
	onRead   func()
	onWrite  func(p []byte)
}

func newRESPPipeConn(pipeline string, rounds int) *respPipeConn {
	return &respPipeConn{pipeline: []byte(pipeline), rounds: rounds, off: len(pipeline)}
}

func (c *respPipeConn) Read(p []byte) (int, error) {
	if c.off == len(c.pipeline) {
		if c.rounds == 0 {
			return 0, io.EOF
		}
		c.rounds--
		c.off = 0
		if c.onRead != nil {
			c.onRead()
		}
	}
	n := copy(p, c.pipeline[c.off:])
	c.off += n
	return n, nil
}

func (c *respPipeConn) Write(p []byte) (int, error) {
	c.written += len(p)
	if c.onWrite != nil {
		c.onWrite(p)
	}
	return len(p), nil
}

func (c *respPipeConn) Close() error                     { return nil }
func (c *respPipeConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (c *respPipeConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (c *respPipeConn) SetDeadline(time.Time) error      { return nil }
func (c *respPipeConn) SetReadDeadline(time.Time) error  { return nil }
func (c *respPipeConn) SetWriteDeadline(time.Time) error { return nil }

// unservedRESPServer is a server that does not serve (a test drives its
// connections, on respPipeConns) over a fresh engine in write mode.
func unservedRESPServer(t testing.TB) *Server {
	t.Helper()
	e, err := engine.Open(engine.Config{Dir: t.TempDir(), Durability: engine.DurabilityWrite})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	s, err := New(Config{RESPAddr: "127.0.0.1:0"}, e)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.respListener.Close() })
	return s
}

// serveRESPPipeline serves pipeline once on a new connection of s and
// returns the connection and everything written to it.
func serveRESPPipeline(s *Server, id int64, pipeline string) (*respConn, string) {
	var out bytes.Buffer
	pc := newRESPPipeConn(pipeline, 1)
	pc.onWrite = func(p []byte) { out.Write(p) }
	c := newRESPConn(s, pc, id)
	c.serve()
	return c, out.String()
}

// respSearchSetup puts 1,000 records whose titles begin with "a", of about
// 200 bytes each, in the catalog: SEARCH a LIMIT 1000 answers with about
// 230 KB. It is 1,000 commands.
var respSearchSetup = func() string {
	var b strings.Builder
	for i := range 1000 {
		b.WriteString(rawCommand("CATALOG.SET", fmt.Sprintf("sku%04d", i),
			fmt.Sprintf("apple %04d %s", i, strings.Repeat("y", 180)), "brand"))
	}
	return b.String()
}()

// TestRoundRepliesAreWrittenInParts: a round's replies are written out
// each time they pass a bound, not assembled whole first. A pipeline of
// 1,000 HOLD.GET big (6 MB of replies) was encoded into one buffer the
// size of a round's replies before its one write; a client that did not
// read kept it.
func TestRoundRepliesAreWrittenInParts(t *testing.T) {
	s := unservedRESPServer(t)
	_, setup := serveRESPPipeline(s, 1, bigHoldSetup)
	_, one := serveRESPPipeline(s, 2, rawCommand("HOLD.GET", "big"))
	if !strings.HasPrefix(one, "*3\r\n$4\r\nheld\r\n") || len(one) < 4096 || !strings.HasSuffix(setup, one) {
		t.Fatalf("HOLD.GET big: %.80q", one)
	}

	const n = 1000
	bound := replyBufferBytesFlush + len(one) // a part passes the bound by a reply at most
	var out bytes.Buffer
	writeMax, outCapMax := 0, 0
	pc := newRESPPipeConn(strings.Repeat(rawCommand("HOLD.GET", "big"), n), 1)
	c := newRESPConn(s, pc, 3)
	pc.onWrite = func(p []byte) {
		out.Write(p)
		writeMax = max(writeMax, len(p))
		outCapMax = max(outCapMax, cap(c.out))
	}
	c.serve()
	t.Logf("%d replies of %d bytes: largest write %d bytes, largest reply buffer %d bytes", n, len(one), writeMax, outCapMax)
	if out.String() != strings.Repeat(one, n) {
		t.Fatalf("got %d bytes of replies, want %d HOLD.GET replies (%d bytes), in order", out.Len(), n, n*len(one))
	}
	if writeMax > bound || outCapMax > replyBufferBytesKeepMax {
		t.Fatalf("a round's replies were assembled in a buffer of %d bytes (largest write %d): want at most %d",
			outCapMax, writeMax, bound)
	}
}

// TestIdleConnectionKeepsLittle: once a connection has served a deep
// pipeline it keeps a few requests, none with buffers beyond the defaults
// or pointing at the catalog's strings, and a read buffer no larger than
// a small pipeline needs. It kept every request its largest round used,
// each with the largest buffers it ever lent (a search's 1,000 hits), and
// its largest read buffer, for the rest of its life.
func TestIdleConnectionKeepsLittle(t *testing.T) {
	s := unservedRESPServer(t)
	serveRESPPipeline(s, 1, rawCommand("STOCK.SET", "g", "w", "new", "retail", "1000000", "1")+respSearchSetup)

	var deep strings.Builder
	for range 1024 {
		deep.WriteString(rawCommand("CAPTURE", "g", "new", "retail", "1"))
	}
	for range 200 {
		deep.WriteString(rawCommand("SEARCH", "a", "LIMIT", "1000"))
	}
	for range 4 {
		deep.WriteString(rawCommand("PING"))
	}
	c, out := serveRESPPipeline(s, 2, deep.String())
	if got := strings.Count(out, "*1000\r\n"); got != 200 || !strings.HasSuffix(out, "+PONG\r\n+PONG\r\n+PONG\r\n+PONG\r\n") {
		t.Fatalf("%d searches answered with 1,000 hits, want 200 (%d bytes of replies)", got, len(out))
	}
	kept, pinned := respIdleBytes(c)
	t.Logf("idle: %d requests kept, read buffer %d bytes, about %d KB held, %d hits still point at the catalog",
		len(c.free), len(c.in), kept>>10, pinned)
	if len(c.free) > requestsKeepMax {
		t.Errorf("an idle connection keeps %d requests: want at most %d", len(c.free), requestsKeepMax)
	}
	if len(c.in) > readBufferBytesKeepMax {
		t.Errorf("an idle connection keeps a read buffer of %d bytes: want at most %d", len(c.in), readBufferBytesKeepMax)
	}
	if pinned > 0 {
		t.Errorf("an idle connection's requests keep %d search hits (the catalog's strings)", pinned)
	}
	for i, r := range c.free {
		if b := r.Buffers; cap(b.Hits) > hitsKeepMax || cap(b.Allocations) > allocationsKeepMax {
			t.Errorf("kept request %d lends buffers of %d hits and %d allocations: want the defaults (%d, %d)",
				i, cap(b.Hits), cap(b.Allocations), hitsKeepMax, allocationsKeepMax)
			break
		}
	}
}

// respIdleBytes estimates what an idle connection holds in its requests and
// read buffer, and counts the search hits its requests still hold.
func respIdleBytes(c *respConn) (held, pinned int) {
	held = cap(c.in) + cap(c.out) + cap(c.immediate)
	for _, r := range c.free {
		held += int(unsafe.Sizeof(*r)) + cap(r.Lines)*int(unsafe.Sizeof(inventory.Line{})) +
			cap(r.Op.Lines)*int(unsafe.Sizeof(inventory.Demand{}))
		if b := r.Buffers; b != nil {
			held += int(unsafe.Sizeof(*b)) + cap(b.Allocations)*int(unsafe.Sizeof(inventory.Allocation{})) +
				cap(b.Hits)*int(unsafe.Sizeof(catalog.Result{}))
			for _, h := range b.Hits[:cap(b.Hits)] {
				if h != (catalog.Result{}) {
					pinned++
				}
			}
		}
	}
	return held, pinned
}

// TestOrdinaryPipelineAllocatesNothing: pipelines of up to 64 small
// commands allocate nothing per command once the connection is warm (what
// keeping a few requests and a small read buffer must not break).
func TestOrdinaryPipelineAllocatesNothing(t *testing.T) {
	s := unservedRESPServer(t)
	serveRESPPipeline(s, 1, rawCommand("STOCK.SET", "g", "w", "new", "retail", "1000000000", "1"))
	for _, depth := range []int{1, 16, 64} {
		var p strings.Builder
		for i := range depth {
			if i%2 == 0 {
				p.WriteString(rawCommand("CAPTURE", "g", "new", "retail", "1"))
			} else {
				p.WriteString(rawCommand("RELEASE", "g", "w", "new", "retail", "1"))
			}
		}
		const warm, measured = 100, 5000
		var m0, m1 runtime.MemStats
		pc := newRESPPipeConn(p.String(), warm+measured)
		pc.onRead = func() {
			switch pc.rounds {
			case measured:
				runtime.ReadMemStats(&m0)
			case 0:
				runtime.ReadMemStats(&m1)
			}
		}
		newRESPConn(s, pc, int64(10+depth)).serve()
		perOp := float64(m1.Mallocs-m0.Mallocs) / float64(depth*(measured-1))
		t.Logf("depth %d: %.4f allocations per command", depth, perOp)
		if perOp > 0.01 {
			t.Errorf("depth %d: %.3f allocations per command at steady state, want 0", depth, perOp)
		}
	}
}

// BenchmarkRESPPathDepth is BenchmarkRESPPath's capture at other depths,
// the client sending each pipeline once it has the replies of the last
// (respPipeConn): 64, an ordinary pipeline, and 1,024, the deepest round.
func BenchmarkRESPPathDepth(b *testing.B) {
	for _, depth := range []int{64, 1024} {
		b.Run(fmt.Sprintf("capture/%d", depth), func(b *testing.B) {
			s := unservedRESPServer(b)
			for _, w := range []string{"w1", "w2", "w3"} {
				k := inventory.RowKey{SKU: "ample", Warehouse: w, Condition: "new", Source: "retail"}
				if _, err := s.engine.Stock(k, inventory.CountMax/2, 1); err != nil {
					b.Fatal(err)
				}
			}
			pipeline := strings.Repeat(rawCommand("CAPTURE", "ample", "new", "retail", "1"), depth)
			newRESPConn(s, newRESPPipeConn(pipeline, 20), 1).serve() // warm up
			pc := newRESPPipeConn(pipeline, (b.N+depth-1)/depth)
			c := newRESPConn(s, pc, 2)
			b.ReportAllocs()
			b.ResetTimer()
			c.serve()
			b.StopTimer()
			if pc.written == 0 {
				b.Fatal("no reply written")
			}
		})
	}
}
