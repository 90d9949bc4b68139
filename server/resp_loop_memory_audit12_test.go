//go:build linux

package server

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"allot/engine"
)

// TestLoopWritesRoundRepliesInParts is TestRoundRepliesAreWrittenInParts
// on the event loop, over a socket: the loop's writes of a round are at
// most the bound each, and the client gets every reply in order.
func TestLoopWritesRoundRepliesInParts(t *testing.T) {
	saved := loopWrite
	largest := 0 // written on the loop's goroutine, read once the server is done
	loopWrite = func(fd int, b []byte) (int, error) {
		largest = max(largest, len(b))
		return writeFDNow(fd, b)
	}
	t.Cleanup(func() { loopWrite = saved })
	s, _ := loopServer(t, engine.DurabilityWrite)
	nc, br := dialRESP(t, s)
	nc.SetDeadline(time.Now().Add(30 * time.Second))
	nc.Write([]byte(bigHoldSetup))
	var one string
	for i := range 66 {
		v, err := readRESP(br)
		if err != nil {
			t.Fatalf("setup reply %d: %v", i, err)
		}
		one = v
	}
	const n = 1000
	go nc.Write([]byte(strings.Repeat(rawCommand("HOLD.GET", "big"), n)))
	for i := range n {
		v, err := readRESP(br)
		if err != nil || v != one {
			t.Fatalf("reply %d of %d: %.60q (%v)", i+1, n, v, err)
		}
	}
	nc.Close()
	waitRESPConns(t, s, 0, 5*time.Second)
	s.loop.signal() // a round trip through the loop: its writes are done
	if v := within(t, s, rawCommand("PING"), 5*time.Second); v != "+PONG\r\n" {
		t.Fatalf("PING: %q", v)
	}
	t.Logf("largest write of the loop: %d bytes", largest)
	if bound := replyBufferBytesFlush + len(one); largest > bound {
		t.Fatalf("the loop wrote %d bytes of a round's replies at once: want at most %d", largest, bound)
	}
}

// TestNonReadingClientHoldsBoundedReplies: a client pipelines searches of
// about 230 KB of replies each and never reads. What the server holds for
// it is about one part of a round's replies, not the round's (tens of MB,
// for as long as the client keeps the connection).
func TestNonReadingClientHoldsBoundedReplies(t *testing.T) {
	for _, mode := range []string{RESPIOGoroutine, RESPIOLoop} {
		t.Run(mode, func(t *testing.T) {
			const heldMax = 2 << 20
			s, e := servedEngine(t, Config{RESPAddr: "127.0.0.1:0", RESPIO: mode}, engine.DurabilityWrite)
			setup, sr := dialRESP(t, s)
			setup.SetDeadline(time.Now().Add(30 * time.Second))
			go setup.Write([]byte(respSearchSetup))
			for i := range 1000 {
				if v, err := readRESP(sr); err != nil || v != "+OK\r\n" {
					t.Fatalf("setup reply %d: %q (%v)", i, v, err)
				}
			}
			setup.Write([]byte(rawCommand("SEARCH", "a", "LIMIT", "1000")))
			if v, err := readRESP(sr); err != nil || !strings.HasPrefix(v, "*1000\r\n") || len(v) < 200_000 {
				t.Fatalf("SEARCH a LIMIT 1000: %.60q (%d bytes, %v)", v, len(v), err)
			}
			before := respHeapLive()

			nc, _ := dialRESP(t, s)
			go nc.Write([]byte(strings.Repeat(rawCommand("SEARCH", "a", "LIMIT", "1000"), 300)))
			last, still := e.Stats().Requests, 0
			for deadline := time.Now().Add(20 * time.Second); still < 3 && time.Now().Before(deadline); {
				time.Sleep(100 * time.Millisecond)
				if n := e.Stats().Requests; n == last {
					still++
				} else {
					last, still = n, 0
				}
			}
			held := int64(respHeapLive()) - int64(before)
			t.Logf("%s: the server holds %d KB more for a client that does not read", mode, held>>10)
			if held > heldMax {
				t.Fatalf("the server holds %d MB more for one client that does not read: want under %d MB", held>>20, heldMax>>20)
			}
			nc.Close()
		})
	}
}

// respHeapLive is the heap's live bytes after a collection.
func respHeapLive() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
