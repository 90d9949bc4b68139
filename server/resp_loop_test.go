//go:build linux

package server

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"allot/engine"
	"allot/inventory"
)

// loopServer is a server on the event loop, over an engine in mode d.
func loopServer(t *testing.T, d engine.Durability) (*Server, *engine.Engine) {
	t.Helper()
	return servedEngine(t, Config{RESPAddr: "127.0.0.1:0", RESPIO: RESPIOLoop}, d)
}

// dialRESP connects to s and returns the connection and its reader.
func dialRESP(t *testing.T, s *Server) (net.Conn, *bufio.Reader) {
	t.Helper()
	nc, err := net.Dial("tcp", s.RESPAddr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return nc, bufio.NewReader(nc)
}

// within sends cmd on a fresh connection and reports its reply, or "" if
// none came within d.
func within(t *testing.T, s *Server, cmd string, d time.Duration) string {
	t.Helper()
	nc, br := dialRESP(t, s)
	nc.SetDeadline(time.Now().Add(d))
	if _, err := nc.Write([]byte(cmd)); err != nil {
		return ""
	}
	v, err := readRESP(br)
	if err != nil {
		return ""
	}
	return v
}

// TestLoopNeverWaitsForAClientThatDoesNotRead: a client pipelines
// commands with large replies and does not read; the loop writes what its
// socket takes and hands the rest to a goroutine, so another client is
// still answered, and once the first one reads, every reply is there in
// order. A loop that wrote with a blocking write (the broken variant)
// stalls on that socket, and the test shows it.
func TestLoopNeverWaitsForAClientThatDoesNotRead(t *testing.T) {
	t.Run("non-blocking", func(t *testing.T) {
		if stalled := floodAndPing(t, writeFDNow); stalled {
			t.Fatal("another client was not answered while one did not read")
		}
	})
	t.Run("blocking write, broken on purpose", func(t *testing.T) {
		blocking := func(fd int, b []byte) (int, error) { return len(b), writeFD(fd, b) }
		if stalled := floodAndPing(t, blocking); !stalled {
			t.Fatal("with a blocking write the loop still answered: the test cannot see the fault it guards against")
		}
	})
}

func floodAndPing(t *testing.T, write func(int, []byte) (int, error)) (stalled bool) {
	saved := loopWrite
	loopWrite = write
	t.Cleanup(func() { loopWrite = saved }) // after the server's cleanup
	s, _ := loopServer(t, engine.DurabilityWrite)

	a, ar := dialRESP(t, s)
	a.Write([]byte(bigHoldSetup))
	a.SetReadDeadline(time.Now().Add(10 * time.Second))
	var want string
	for i := 0; i < 66; i++ {
		v, err := readRESP(ar)
		if err != nil {
			t.Fatalf("setup reply %d: %v", i, err)
		}
		want = v
	}
	if !strings.HasPrefix(want, "*3\r\n$4\r\nheld\r\n") || len(want) < 4096 {
		t.Fatalf("HOLD.GET big: %q", want)
	}

	// 5,000 of them, about 30 MB of replies, more than loopback's socket
	// buffers hold: a keeps writing (from a goroutine: its own writes
	// block once the server stops reading it) and reads nothing.
	const n = 5000
	go func() {
		one := []byte(rawCommand("HOLD.GET", "big"))
		var batch []byte
		for range 100 {
			batch = append(batch, one...)
		}
		for range n / 100 {
			if _, err := a.Write(batch); err != nil {
				return
			}
		}
	}()
	time.Sleep(300 * time.Millisecond) // the loop fills a's socket
	stalled = within(t, s, rawCommand("PING"), 3*time.Second) != "+PONG\r\n"

	// a reads: every reply, in order (the broken loop resumes now).
	a.SetReadDeadline(time.Now().Add(60 * time.Second))
	for i := 0; i < n; i++ {
		v, err := readRESP(ar)
		if err != nil {
			t.Fatalf("reply %d of %d: %v", i, n, err)
		}
		if v != want {
			t.Fatalf("reply %d: %.80q, want HOLD.GET's", i, v)
		}
	}
	return stalled
}

// TestLoopRunsChangesOnAGoroutine: CHANGES ... BLOCK waits for events; the
// loop leaves it to a goroutine, so the op that makes the event is
// answered at once and the waiting reader gets it. A loop that ran
// CHANGES itself (the broken variant) answers nobody while it waits.
func TestLoopRunsChangesOnAGoroutine(t *testing.T) {
	for _, broken := range []bool{false, true} {
		name := "deferred"
		if broken {
			name = "on the loop, broken on purpose"
		}
		t.Run(name, func(t *testing.T) {
			saved := loopDefersChanges
			loopDefersChanges = !broken
			t.Cleanup(func() { loopDefersChanges = saved })
			s, _ := loopServer(t, engine.DurabilityWrite)
			if v := within(t, s, rawCommand("STOCK.SET", "a", "w", "new", "retail", "1", "1"), 5*time.Second); v != "+OK\r\n" {
				t.Fatalf("STOCK.SET: %q", v)
			}
			reader, rr := dialRESP(t, s)
			reader.Write([]byte(rawCommand("CHANGES", "1", "BLOCK", "3000")))
			time.Sleep(200 * time.Millisecond) // the reader waits
			start := time.Now()
			v := within(t, s, rawCommand("STOCK.SET", "b", "w", "new", "retail", "2", "1"), 10*time.Second)
			took := time.Since(start)
			if v != "+OK\r\n" {
				t.Fatalf("STOCK.SET while a reader waits: %q", v)
			}
			reader.SetReadDeadline(time.Now().Add(10 * time.Second))
			events, err := readRESP(rr)
			if err != nil {
				t.Fatal(err)
			}
			if broken {
				if took < time.Second {
					t.Fatalf("CHANGES on the loop and an op answered in %v: the test cannot see the fault it guards against", took)
				}
				return
			}
			if took > time.Second {
				t.Fatalf("an op waited %v behind a CHANGES reader", took)
			}
			if !strings.HasPrefix(events, "*1\r\n") || !strings.Contains(events, `"seq":2`) || !strings.Contains(events, `"sku":"b"`) {
				t.Fatalf("the waiting reader got %q, want the event of seq 2", events)
			}
		})
	}
}

// TestLoopParksPipelinedRoundsInFsync: in fsync mode a round of several
// ops waits for the fdatasync; the loop parks its connection and the
// round's last op wakes it, with no goroutine. Eight clients pipelining
// ops with a PING among them get every reply in order, every capture is
// counted, and no round went to a goroutine for its replies. With parking
// off (the broken variant, the per-round goroutine), the hand-offs show.
func TestLoopParksPipelinedRoundsInFsync(t *testing.T) {
	if got := pipelineFsync(t, true); got != 0 {
		t.Fatalf("%d rounds went to a goroutine for their replies, want 0 (parked)", got)
	}
	if got := pipelineFsync(t, false); got == 0 {
		t.Fatal("with parking off no round went to a goroutine: the test cannot see what it guards")
	}
}

func pipelineFsync(t *testing.T, parks bool) (handedOff uint64) {
	saved := loopParks
	loopParks = parks
	defer func() { loopParks = saved }()
	s, e := loopServer(t, engine.DurabilityFsync)
	const clients, rounds, ops = 8, 40, 5
	if v := within(t, s, rawCommand("STOCK.SET", "g", "w", "new", "retail", "1000000", "1"), 5*time.Second); v != "+OK\r\n" {
		t.Fatalf("STOCK.SET: %q", v)
	}
	var round strings.Builder
	for range ops {
		round.WriteString(rawCommand("CAPTURE", "g", "new", "retail", "1"))
	}
	round.WriteString(rawCommand("PING"))
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nc, err := net.Dial("tcp", s.RESPAddr())
			if err != nil {
				errs <- err
				return
			}
			defer nc.Close()
			nc.SetDeadline(time.Now().Add(30 * time.Second))
			br := bufio.NewReader(nc)
			for r := range rounds {
				if _, err := nc.Write([]byte(round.String())); err != nil {
					errs <- err
					return
				}
				for i := range ops + 1 {
					v, err := readRESP(br)
					if err != nil {
						errs <- fmt.Errorf("round %d reply %d: %w", r, i, err)
						return
					}
					if i == ops && v != "+PONG\r\n" || i < ops && !strings.HasPrefix(v, "*") {
						errs <- fmt.Errorf("round %d reply %d: %q", r, i, v)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	r, err := e.Get(inventory.RowKey{SKU: "g", Warehouse: "w", Condition: "new", Source: "retail"})
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(1000000 - clients*rounds*ops); r.Count != want {
		t.Fatalf("stock %d after the captures, want %d", r.Count, want)
	}
	return s.metrics.handoffs[resumeReply].Load()
}

// TestLoopQuitAfterParkedRound: in fsync mode a client pipelines ops and
// QUIT in one write. The round parks until the flusher's sync; the
// connection must stay open until its replies are written, then close
// after QUIT's +OK, and the server must go on. A loop that closed the
// connection as soon as it read QUIT lost the replies and, when the
// flusher's notification came for the connection it had closed, took it
// out of the server twice: a panic of the whole process.
func TestLoopQuitAfterParkedRound(t *testing.T) {
	s, _ := loopServer(t, engine.DurabilityFsync)
	nc, br := dialRESP(t, s)
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := nc.Write([]byte(rawCommand("STOCK.SET", "q", "w", "new", "o", "5", "1") +
		rawCommand("CAPTURE", "q", "new", "o", "2") + rawCommand("QUIT"))); err != nil {
		t.Fatal(err)
	}
	var got []string
	for {
		v, err := readRESP(br)
		if err != nil {
			break
		}
		got = append(got, v)
	}
	if len(got) != 3 || got[0] != "+OK\r\n" || got[1] != "*1\r\n*2\r\n$1\r\nw\r\n:2\r\n" || got[2] != "+OK\r\n" {
		t.Fatalf("replies %q; want +OK, the capture, +OK, then the connection closed", got)
	}
	if v := within(t, s, rawCommand("STOCK.GET", "q", "w", "new", "o"), 5*time.Second); v != "*2\r\n:3\r\n:1\r\n" {
		t.Fatalf("after the QUIT, GET answered %q; want the row at 3", v)
	}
}

// TestLoopClientGoneWhileParked: in fsync mode, clients write rounds of
// zero to six captures (a third of them ending with QUIT) and close their
// sockets at once or a moment later, while their rounds are parked for
// the flusher or being answered. The server must go on serving and shut
// down cleanly (loopServer's cleanup checks it).
func TestLoopClientGoneWhileParked(t *testing.T) {
	s, _ := loopServer(t, engine.DurabilityFsync)
	for i := range 200 {
		nc, _ := dialRESP(t, s)
		b := rawCommand("STOCK.SET", "q", "w", "new", "o", "500", "1")
		for range i % 7 {
			b += rawCommand("CAPTURE", "q", "new", "o", "1")
		}
		if i%3 == 0 {
			b += rawCommand("QUIT")
		}
		if _, err := nc.Write([]byte(b)); err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			time.Sleep(time.Duration(i%5) * 50 * time.Microsecond)
		}
		nc.Close()
	}
	if v := within(t, s, rawCommand("PING"), 5*time.Second); v != "+PONG\r\n" {
		t.Fatalf("after 200 clients gone with rounds parked, PING answered %q", v)
	}
}

// TestShutdownAnswersEveryCommandRead: a shutdown lets a connection
// finish the commands it has read. A pipeline of ten ops, served in
// rounds of two (PipelineDepthMax) that each wait for the disk, is
// answered whole when the shutdown begins while its first round waits,
// in both modes (the loop once closed a connection after the round it
// had parked, with the rest of its pipeline unanswered).
func TestShutdownAnswersEveryCommandRead(t *testing.T) {
	for _, io := range []string{RESPIOLoop, RESPIOGoroutine} {
		t.Run(io, func(t *testing.T) {
			e, err := engine.Open(engine.Config{Dir: t.TempDir(), Durability: engine.DurabilityFsync, ManualFlush: true})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			s, err := New(Config{RESPAddr: "127.0.0.1:0", RESPIO: io, PipelineDepthMax: 2}, e)
			if err != nil {
				t.Fatal(err)
			}
			served := make(chan error, 1)
			go func() { served <- s.Serve() }()
			stockFlushed(t, e)
			nc, br := dialRESP(t, s)
			var pipeline strings.Builder
			for range 10 {
				pipeline.WriteString(rawCommand("RELEASE", "g", "w", "new", "retail", "1"))
			}
			nc.Write([]byte(pipeline.String()))
			time.Sleep(200 * time.Millisecond) // the first round waits for the disk
			shut := make(chan error, 1)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				shut <- s.Shutdown(ctx)
			}()
			for !s.closingNow() {
				time.Sleep(time.Millisecond)
			}
			stop := make(chan struct{}) // the disk goes on from here
			flushed := flushEvery(e, stop)
			nc.SetReadDeadline(time.Now().Add(20 * time.Second))
			for i := 1; i <= 10; i++ {
				v, err := readRESP(br)
				if err != nil {
					t.Fatalf("reply %d of 10: %v (%q)", i, err, v)
				}
				if want := fmt.Sprintf(":%d\r\n", i); v != want {
					t.Fatalf("reply %d: %q, want %q", i, v, want)
				}
			}
			if err := <-shut; err != nil {
				t.Fatal(err)
			}
			if err := <-served; err != nil {
				t.Fatal(err)
			}
			close(stop)
			<-flushed
		})
	}
}
