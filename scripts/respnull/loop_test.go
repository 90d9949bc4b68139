//go:build linux

package main

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

func start(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l, err := newLoop(ln.(*net.TCPListener))
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 1)
	go func() { errs <- l.run() }()
	t.Cleanup(func() {
		l.close()
		if err := <-errs; err != nil {
			t.Error(err)
		}
	})
	return ln.Addr().String()
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
