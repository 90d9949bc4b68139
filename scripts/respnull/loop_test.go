//go:build linux

package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func start(t *testing.T) string {
	t.Helper()
	addr, _, _ := startLoop(t, false)
	return addr
}

// startLoop starts a loop (with a journal in a temporary file when
// journaled) and returns its address, the loop and run's result. At the
// end of the test a loop still running is closed and must stop cleanly;
// one that stopped on its own was the test's to check.
func startLoop(t *testing.T, journaled bool) (string, *loop, <-chan error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l, err := newLoop(ln.(*net.TCPListener))
	if err != nil {
		t.Fatal(err)
	}
	if journaled {
		if l.journal, err = openJournal(filepath.Join(t.TempDir(), "journal")); err != nil {
			t.Fatal(err)
		}
	}
	errs := make(chan error, 1)
	done := make(chan struct{})
	var result error
	go func() {
		result = l.run()
		close(done)
		errs <- result
	}()
	t.Cleanup(func() {
		select {
		case <-done: // run returned and closed its descriptors
		default:
			l.close()
			<-done
			if result != nil {
				t.Error(result)
			}
		}
		if l.journal != nil {
			l.journal.close()
		}
	})
	return ln.Addr().String(), l, errs
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	nc.SetDeadline(time.Now().Add(20 * time.Second))
	t.Cleanup(func() { nc.Close() })
	return nc
}

// TestReplies: PING, PING <msg>, any other command, inline and multibulk,
// a command split over writes, all answered in order.
func TestReplies(t *testing.T) {
	nc := dial(t, start(t))
	capture := "*5\r\n$7\r\nCAPTURE\r\n$5\r\nample\r\n$3\r\nnew\r\n$6\r\nretail\r\n$1\r\n1\r\n"
	for _, part := range []string{
		"PING\r\n*2\r\n$4\r\nPING\r\n$2\r\nhi\r\n",
		capture[:9], capture[9:],
		"*1\r\n$4\r\nping\r\n",
	} {
		if _, err := io.WriteString(nc, part); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond) // separate reads on the server
	}
	want := "+PONG\r\n$2\r\nhi\r\n+OK\r\n+PONG\r\n"
	got := make([]byte, len(want))
	if _, err := io.ReadFull(nc, got); err != nil {
		t.Fatalf("read %q: %v", got, err)
	}
	if string(got) != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// TestFatalFrameClosesTheConnection: what allot refuses as a lost frame,
// respnull refuses and closes too.
func TestFatalFrameClosesTheConnection(t *testing.T) {
	nc := dial(t, start(t))
	io.WriteString(nc, "*1\r\n$x\r\n")
	got, err := io.ReadAll(nc)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(got), "-ERR Protocol error") {
		t.Fatalf("got %q, want a protocol error and the end of the stream", got)
	}
}

// TestLongPipelineWithASlowReader: a client that writes a long pipeline
// before reading anything fills the server's socket (20 MB of replies);
// every reply still comes, whole and in order (the EPOLLOUT path).
func TestLongPipelineWithASlowReader(t *testing.T) {
	nc := dial(t, start(t))
	const n = 20000
	msg := strings.Repeat("m", 1000)
	var req bytes.Buffer
	for i := range n {
		if i%2 == 0 {
			req.WriteString("*2\r\n$4\r\nPING\r\n$1000\r\n" + msg + "\r\n")
		} else {
			req.WriteString("*2\r\n$3\r\nSET\r\n$1\r\nx\r\n")
		}
	}
	werr := make(chan error, 1)
	go func() {
		_, err := nc.Write(req.Bytes())
		werr <- err
	}()
	time.Sleep(200 * time.Millisecond) // let the server's socket fill
	r := bufio.NewReader(nc)
	for i := range n {
		want := "+OK\r\n"
		if i%2 == 0 {
			want = "$1000\r\n" + msg + "\r\n"
		}
		got := make([]byte, len(want))
		if _, err := io.ReadFull(r, got); err != nil {
			t.Fatalf("reply %d: %v", i, err)
		}
		if string(got) != want {
			t.Fatalf("reply %d: got %.40q, want %.40q", i, got, want)
		}
	}
	if err := <-werr; err != nil {
		t.Fatal(err)
	}
}

// TestManyConnections: connections come and go while others are served.
func TestManyConnections(t *testing.T) {
	addr := start(t)
	for range 50 {
		nc := dial(t, addr)
		io.WriteString(nc, "PING\r\n")
		got := make([]byte, 7)
		if _, err := io.ReadFull(nc, got); err != nil || string(got) != "+PONG\r\n" {
			t.Fatalf("got %q, %v", got, err)
		}
		nc.Close()
	}
}

// record reads the journal's record i (0 when never written).
func record(t *testing.T, j *journal, i int) uint64 {
	t.Helper()
	var b [8]byte
	if _, err := j.f.ReadAt(b[:], int64(8*i)); err != nil {
		t.Fatal(err)
	}
	return binary.LittleEndian.Uint64(b[:])
}

// TestJournalCommitsWritesOnly: with -sync, a PING is answered without a
// commit, and a write's reply comes once its round's record is written.
func TestJournalCommitsWritesOnly(t *testing.T) {
	addr, l, _ := startLoop(t, true)
	j := l.journal
	nc := dial(t, addr)
	got := make([]byte, 7)
	io.WriteString(nc, "PING\r\n")
	if _, err := io.ReadFull(nc, got); err != nil || string(got) != "+PONG\r\n" {
		t.Fatalf("got %q, %v", got, err)
	}
	if n := record(t, j, 0); n != 0 {
		t.Fatalf("a PING made record %d", n)
	}
	for i := 1; i <= 3; i++ {
		io.WriteString(nc, "SET x 1\r\n")
		got = got[:5]
		if _, err := io.ReadFull(nc, got); err != nil || string(got) != "+OK\r\n" {
			t.Fatalf("write %d: got %q, %v", i, got, err)
		}
		if n := record(t, j, i-1); n != uint64(i) {
			t.Fatalf("after write %d's reply the journal's record %d holds %d", i, i-1, n)
		}
	}
}

// TestJournalFailureSendsNoReply: a write whose commit fails is never
// answered, and the server stops with the error (the replies wait for the
// commit: a server that sent them first would answer +OK here).
func TestJournalFailureSendsNoReply(t *testing.T) {
	addr, l, errs := startLoop(t, true)
	nc := dial(t, addr)
	l.journal.f.Close() // the next commit's write fails
	io.WriteString(nc, "SET x 1\r\n")
	select {
	case err := <-errs:
		if err == nil || !strings.Contains(err.Error(), "journal write") {
			t.Fatalf("run returned %v, want the journal's write error", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run did not stop on a failed commit")
	}
	nc.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if b, _ := io.ReadAll(nc); len(b) > 0 {
		t.Fatalf("a write whose commit failed was answered %q", b)
	}
}
