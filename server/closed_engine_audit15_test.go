package server_test

import (
	"bufio"
	"net"
	"strings"
	"testing"
	"time"

	"allot/server/servertest"
)

// An op the engine refuses because it closed (allot serve shutting down,
// a cluster node ending its term) was never applied: its reply must be of
// the refused class, -UNAVAILABLE, which a client retries elsewhere. It
// was -ERR engine: unavailable: closed, which a client takes for an
// invalid request of its own.
func TestRESPOpRefusedByAClosedEngineIsUnavailable(t *testing.T) {
	s := servertest.Start(t, servertest.Options{NoHTTP: true})
	nc, err := net.Dial("tcp", s.RESPAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	rd := bufio.NewReader(nc)
	if _, err := nc.Write([]byte("STOCK.SET s1 w1 new own 5 100\r\n")); err != nil {
		t.Fatal(err)
	}
	if line, err := rd.ReadString('\n'); err != nil || line != "+OK\r\n" {
		t.Fatalf("STOCK.SET: %q %v", line, err)
	}
	if err := s.Engine.Close(); err != nil {
		t.Fatal(err)
	}
	// One op alone, then a pipeline of two (SubmitBatch's two paths).
	for _, send := range []string{
		"CAPTURE s1 new own 1\r\n",
		"CAPTURE s1 new own 1\r\nRELEASE s1 w1 new own 1\r\n",
	} {
		if _, err := nc.Write([]byte(send)); err != nil {
			t.Fatal(err)
		}
		for range strings.Count(send, "\r\n") {
			nc.SetReadDeadline(time.Now().Add(5 * time.Second))
			line, err := rd.ReadString('\n')
			if err != nil {
				t.Fatalf("after %q: %v", send, err)
			}
			if !strings.HasPrefix(line, "-UNAVAILABLE ") {
				t.Errorf("after %q: reply %q, want -UNAVAILABLE (refused, never applied)", send, strings.TrimSpace(line))
			}
		}
	}
}
