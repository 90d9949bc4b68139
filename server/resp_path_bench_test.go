package server

import (
	"io"
	"net"
	"strconv"
	"testing"
	"time"

	"allot/engine"
	"allot/inventory"
)

// loopConn is a net.Conn that hands the server the same pipeline of
// requests on every Read, rounds times, then io.EOF, and drops what the
// server writes: the whole RESP request path (read, decode, submit,
// apply, journal, reply encoding, write) without a socket.
type loopConn struct {
	request []byte
	rounds  int
	written int
}

func (c *loopConn) Read(p []byte) (int, error) {
	if c.rounds == 0 {
		return 0, io.EOF
	}
	c.rounds--
	return copy(p, c.request), nil
}

func (c *loopConn) Write(p []byte) (int, error)      { c.written += len(p); return len(p), nil }
func (c *loopConn) Close() error                     { return nil }
func (c *loopConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (c *loopConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (c *loopConn) SetDeadline(time.Time) error      { return nil }
func (c *loopConn) SetReadDeadline(time.Time) error  { return nil }
func (c *loopConn) SetWriteDeadline(time.Time) error { return nil }

// BenchmarkRESPPath measures the server's whole request path per command,
// allocations included (run with -benchmem): pipelines of 16 commands, as
// redis-benchmark -P 16 sends them, on one connection of an engine in
// write mode (the frame is copied into the mapped journal; no fdatasync to
// wait for). The target is 0 allocs/op at steady state.
func BenchmarkRESPPath(b *testing.B) {
	for _, tc := range []struct {
		name    string
		command func(i int) string
	}{
		{"capture", func(i int) string { return "CAPTURE ample new retail 1" }},
		{"release", func(i int) string { return "RELEASE ample w1 new retail 1" }},
		{"mixed", func(i int) string {
			if i%2 == 0 {
				return "CAPTURE ample new retail 1"
			}
			return "RELEASE ample w" + strconv.Itoa(1+i%3) + " new retail 1"
		}},
		{"ping", func(i int) string { return "PING" }},
		// A HOLD's id is one per cart; the pipeline is the same bytes every
		// round, so after the warm-up each HOLD is a repeat of its first
		// (answered from the hold, nothing taken): a new hold every time
		// would allocate the hold itself. Each HOLD still allocates its
		// id's string (1 alloc/op): hold ids are one per cart and not
		// interned (resp.DecodeOp).
		{"hold", func(i int) string {
			return "HOLD cart-" + strconv.Itoa(i) + " 600000 ample new retail 1 bright new retail 2 cedar new retail 1"
		}},
		{"order", func(i int) string { return "ORDER ample new retail 1 bright new retail 2 cedar new retail 1" }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			const depth = 16
			e, err := engine.Open(engine.Config{Dir: b.TempDir(), Durability: engine.DurabilityWrite})
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			for _, sku := range []string{"ample", "bright", "cedar"} {
				for _, w := range []string{"w1", "w2", "w3"} {
					k := inventory.RowKey{SKU: sku, Warehouse: w, Condition: "new", Source: "retail"}
					if _, err := e.Stock(k, inventory.CountMax/2, 1); err != nil {
						b.Fatal(err)
					}
				}
			}
			var req []byte
			for i := range depth {
				req = appendInline(req, tc.command(i))
			}
			s, err := New(Config{RESPAddr: "127.0.0.1:0"}, e)
			if err != nil {
				b.Fatal(err)
			}
			// Warm up: buffers, pools and the interner reach steady state.
			warm := &loopConn{request: req, rounds: 100}
			newRESPConn(s, warm, 1).serve()
			lc := &loopConn{request: req, rounds: (b.N + depth - 1) / depth}
			c := newRESPConn(s, lc, 2)
			b.ReportAllocs()
			b.ResetTimer()
			c.serve()
			b.StopTimer()
			if lc.written == 0 {
				b.Fatal("no reply written")
			}
		})
	}
}

// appendInline appends a command as a RESP array of bulk strings.
func appendInline(b []byte, command string) []byte {
	var words []string
	start := 0
	for i := 0; i <= len(command); i++ {
		if i == len(command) || command[i] == ' ' {
			words = append(words, command[start:i])
			start = i + 1
		}
	}
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(len(words)), 10)
	b = append(b, "\r\n"...)
	for _, w := range words {
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(len(w)), 10)
		b = append(b, "\r\n"...)
		b = append(b, w...)
		b = append(b, "\r\n"...)
	}
	return b
}
