package server

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"allot/engine"
)

// directServer is a server on an fsync engine whose flusher runs only when
// the test calls Flush, so the test decides when replies are due.
func directServer(t *testing.T) (*Server, *engine.Engine) {
	t.Helper()
	e, err := engine.Open(engine.Config{Dir: t.TempDir(), Durability: engine.DurabilityFsync, ManualFlush: true})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{RESPAddr: "127.0.0.1:0"}, e)
	if err != nil {
		e.Close()
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve() }()
	t.Cleanup(func() {
		// Flush what is pending so that no connection waits on the
		// manual flusher, then stop.
		stop := make(chan struct{})
		flushEvery(e, stop)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		<-served
		close(stop)
		e.Close()
	})
	return s, e
}

// bigHoldSetup makes a hold of 64 lines with long names, "big", and
// reads it: HOLD.GET big answers with about 6 KB. It is 66 commands (their
// last reply is HOLD.GET's).
var bigHoldSetup = func() string {
	var setup strings.Builder
	hold := []string{"HOLD", "big", "600000"}
	for i := 0; i < 64; i++ {
		sku := fmt.Sprintf("%060d", i)
		setup.WriteString(rawCommand("STOCK.SET", sku, "w", "new", "retail", "1", "1"))
		hold = append(hold, sku, "new", "retail", "1")
	}
	setup.WriteString(rawCommand(hold...))
	setup.WriteString(rawCommand("HOLD.GET", "big"))
	return setup.String()
}()

// flushEvery flushes e every millisecond until stop is closed; the
// channel it returns is closed once it stopped.
func flushEvery(e *engine.Engine, stop <-chan struct{}) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
				e.Flush()
				time.Sleep(time.Millisecond)
			}
		}
	}()
	return done
}

func rawCommand(args ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b.String()
}

// flushWithin runs one Flush and reports whether it returned within d.
func flushWithin(e *engine.Engine, d time.Duration) bool {
	done := make(chan struct{})
	go func() {
		e.Flush()
		close(done)
	}()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// TestDirectReplyNeverBlocksTheFlusher: a client that sends ops one at a
// time and never reads fills its socket; the flusher, which writes depth-1
// replies itself, must still finish every flush, so that other clients go
// on being answered; and once the client reads, every reply is there, in
// order. A flusher that wrote with a blocking write (the broken variant)
// stalls on that socket, and the test shows it.
func TestDirectReplyNeverBlocksTheFlusher(t *testing.T) {
	t.Run("non-blocking", func(t *testing.T) {
		if stalled := fillAndFlush(t, writeNow); stalled {
			t.Fatal("a flush stalled behind a client that does not read")
		}
	})
	t.Run("blocking write, broken on purpose", func(t *testing.T) {
		blocking := func(c *respConn, b []byte) (int, error) { return len(b), c.write(b) }
		if stalled := fillAndFlush(t, blocking); !stalled {
			t.Fatal("with a blocking write no flush stalled: the test cannot see the fault it guards against")
		}
	})
}

// fillAndFlush sends single ops on a connection that does not read until
// its socket is full, flushing after each, with write as the direct
// reply's writer; then it checks that another client is answered and that
// the first one gets all its replies once it reads. It reports whether a
// flush stalled (and the test went on by draining the socket).
func fillAndFlush(t *testing.T, write func(*respConn, []byte) (int, error)) (stalled bool) {
	saved := directWrite
	directWrite = write
	t.Cleanup(func() { directWrite = saved }) // after the server's cleanup
	s, e := directServer(t)

	a, err := net.Dial("tcp", s.RESPAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	// A few dozen replies of HOLD.GET big fill the socket.
	a.Write([]byte(bigHoldSetup))
	ar := bufio.NewReader(a)
	replies := make(chan string, 66)
	go func() {
		a.SetReadDeadline(time.Now().Add(10 * time.Second))
		for range 66 {
			v, err := readRESP(ar)
			if err != nil {
				v = err.Error()
			}
			replies <- v
		}
	}()
	var want string // HOLD.GET's reply
	for got := 0; got < 66; {
		select {
		case want = <-replies:
			got++
		case <-time.After(time.Millisecond):
			if !flushWithin(e, 5*time.Second) {
				t.Fatal("a flush stalled while setting up")
			}
		}
	}
	if !strings.HasPrefix(want, "*3\r\n$4\r\nheld\r\n") || len(want) < 4096 {
		t.Fatalf("HOLD.GET big: %q", want)
	}
	a.SetReadDeadline(time.Time{})
	// Send one op at a time and flush it, until the connection stops
	// taking new ops (its last reply waits for room in the socket).
	sent := 0
	for applied := e.Stats().Requests; sent < 10000; sent++ {
		if _, err := a.Write([]byte(rawCommand("HOLD.GET", "big"))); err != nil {
			t.Fatal(err)
		}
		progressed := false
		for try := 0; try < 50 && !progressed; try++ {
			if !flushWithin(e, 2*time.Second) {
				stalled = true
				break
			}
			progressed = e.Stats().Requests > applied
			if !progressed {
				time.Sleep(time.Millisecond)
			}
		}
		if stalled || !progressed {
			break
		}
		applied = e.Stats().Requests
	}
	t.Logf("sent %d, stalled %v", sent, stalled)
	if sent < 10 {
		t.Fatalf("the connection stopped after %d ops: the socket cannot have been full", sent)
	}
	if !stalled {
		// Another client is answered while a's socket is full.
		b, err := net.Dial("tcp", s.RESPAddr())
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		b.Write([]byte(rawCommand("STOCK.SET", "other", "w", "new", "retail", "1", "1")))
		got := make(chan string, 1)
		go func() {
			b.SetReadDeadline(time.Now().Add(5 * time.Second))
			line, _ := bufio.NewReader(b).ReadString('\n')
			got <- line
		}()
		for deadline := time.Now().Add(5 * time.Second); len(got) == 0 && time.Now().Before(deadline); {
			if !flushWithin(e, 2*time.Second) {
				stalled = true
				break
			}
			time.Sleep(time.Millisecond)
		}
		if !stalled {
			if line := <-got; line != "+OK\r\n" {
				t.Fatalf("another client got %q while one socket was full, want +OK", line)
			}
		}
	}
	// a reads: every op sent before it stopped gets its reply, in order,
	// with flushes going on for the ops that now come through.
	drained := make(chan error, 1)
	go func() {
		a.SetReadDeadline(time.Now().Add(20 * time.Second))
		for i := 0; i <= sent; i++ {
			got, err := readRESP(ar)
			if err != nil {
				drained <- fmt.Errorf("reply %d of %d: %v", i+1, sent+1, err)
				return
			}
			if got != want {
				drained <- fmt.Errorf("reply %d: %.60q..., want %.60q...", i+1, got, want)
				return
			}
		}
		drained <- nil
	}()
	for {
		select {
		case err := <-drained:
			if err != nil {
				t.Fatal(err)
			}
			return stalled
		case <-time.After(time.Millisecond):
			e.Flush()
		}
	}
}

// readRESP reads one whole RESP value and returns its bytes.
func readRESP(br *bufio.Reader) (string, error) {
	line, err := br.ReadString('\n')
	if err != nil {
		return line, err
	}
	n, _ := strconv.Atoi(strings.TrimSpace(line[1:]))
	switch line[0] {
	case '*':
		v := line
		for range n {
			e, err := readRESP(br)
			v += e
			if err != nil {
				return v, err
			}
		}
		return v, nil
	case '$':
		if n < 0 {
			return line, nil
		}
		b := make([]byte, n+2)
		_, err := io.ReadFull(br, b)
		return line + string(b), err
	}
	return line, nil
}

// TestDirectReplyKeepsTheOrder: commands that arrive while an op's direct
// reply is still due are answered after it: PING alone, and PING before
// CHANGES in one round (CHANGES writes the replies before it at once).
func TestDirectReplyKeepsTheOrder(t *testing.T) {
	for _, tc := range []struct {
		name, next string
		want       []string
	}{
		{"ping", rawCommand("PING"), []string{"+PONG\r\n"}},
		{"ping and changes", rawCommand("PING") + rawCommand("CHANGES", "0"), []string{"+PONG\r\n", "*"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, e := directServer(t)
			a, err := net.Dial("tcp", s.RESPAddr())
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			br := bufio.NewReader(a)
			a.Write([]byte(rawCommand("STOCK.SET", "s", "w", "new", "retail", "1", "1")))
			time.Sleep(50 * time.Millisecond) // a round of its own
			a.Write([]byte(tc.next))
			a.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
			if line, err := br.ReadString('\n'); err == nil {
				t.Fatalf("got %q before the op was durable", line)
			}
			a.SetReadDeadline(time.Now().Add(5 * time.Second))
			go func() {
				for range 3 {
					e.Flush()
					time.Sleep(10 * time.Millisecond)
				}
			}()
			for _, want := range append([]string{"+OK\r\n"}, tc.want...) {
				got, err := readRESP(br)
				if err != nil || !strings.HasPrefix(got, want) {
					t.Fatalf("got %q (%v), want %q first", got, err, want)
				}
			}
		})
	}
}
