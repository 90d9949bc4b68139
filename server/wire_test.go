package server_test

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"allot/server/servertest"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the golden files under testdata/ from what the server answers")

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(servertest.Main(m))
}

// wire is a raw RESP connection for tests that must see the exact bytes.
type wire struct {
	t  testing.TB
	nc net.Conn
	br *bufio.Reader
}

func dialWire(t testing.TB, addr string) *wire {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &wire{t: t, nc: nc, br: bufio.NewReader(nc)}
}

func (w *wire) send(b []byte) {
	w.t.Helper()
	if _, err := w.nc.Write(b); err != nil {
		w.t.Fatalf("send %q: %v", b, err)
	}
}

// command encodes args as a RESP multibulk command.
func command(args ...string) []byte {
	b := []byte("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		b = append(b, "$"+strconv.Itoa(len(a))+"\r\n"+a+"\r\n"...)
	}
	return b
}

// reply reads one whole RESP reply and returns its bytes. A test that
// waits for a reply which never comes fails after 10 s rather than hang.
func (w *wire) reply() string {
	w.t.Helper()
	w.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	var b bytes.Buffer
	if err := readValue(w.br, &b); err != nil {
		w.t.Fatalf("reading a reply: %v (read so far %q)", err, b.String())
	}
	return b.String()
}

// closed reports whether the server closed the connection (EOF on read).
func (w *wire) closed() bool {
	w.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := w.br.ReadByte()
	return err != nil && !errors.Is(err, os.ErrDeadlineExceeded)
}

func readValue(br *bufio.Reader, out *bytes.Buffer) error {
	line, err := br.ReadString('\n')
	out.WriteString(line)
	if err != nil {
		return err
	}
	if len(line) < 3 || !strings.HasSuffix(line, "\r\n") {
		return fmt.Errorf("bad reply line %q", line)
	}
	n, _ := strconv.Atoi(line[1 : len(line)-2])
	switch line[0] {
	case '+', '-', ':':
		return nil
	case '$':
		if n < 0 {
			return nil
		}
		payload := make([]byte, n+2)
		if _, err := readFull(br, payload); err != nil {
			return err
		}
		out.Write(payload)
		return nil
	case '*':
		for i := 0; i < n; i++ {
			if err := readValue(br, out); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("bad reply type in %q", line)
}

func readFull(br *bufio.Reader, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := br.Read(b[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// lines splits a reply into its CRLF-terminated lines, for golden files.
func lines(reply string) []string {
	return strings.Split(strings.TrimSuffix(reply, "\r\n"), "\r\n")
}

// golden rebuilds a golden file step by step while comparing each step
// with what the file says; under -rewrite it writes the rebuilt text.
type golden struct {
	t    *testing.T
	path string
	out  strings.Builder
}

// step records one exchange: the comment lines before it, the request
// line, and the lines the server answered; it reports a difference from
// want.
func (g *golden) step(pre []string, line string, got, want []string) {
	g.t.Helper()
	for _, p := range pre {
		g.out.WriteString(p + "\n")
	}
	g.out.WriteString("> " + line + "\n")
	for _, l := range got {
		g.out.WriteString(l + "\n")
	}
	if !*rewrite && strings.Join(got, "\n") != strings.Join(want, "\n") {
		g.t.Errorf("> %s\n got:\n%s\nwant:\n%s", line, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// finish adds the trailing comment lines and, under -rewrite, writes the
// file.
func (g *golden) finish(trailer []string) {
	g.t.Helper()
	for _, p := range trailer {
		g.out.WriteString(p + "\n")
	}
	if *rewrite {
		if err := os.WriteFile(g.path, []byte(g.out.String()), 0o644); err != nil {
			g.t.Fatal(err)
		}
	}
}
