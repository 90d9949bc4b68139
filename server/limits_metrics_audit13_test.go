package server

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"allot/engine"
)

// metricLine returns the line of the metrics text that starts with name
// and a space, or "".
func metricLine(text, name string) string {
	for line := range strings.Lines(text) {
		if strings.HasPrefix(line, name+" ") {
			return strings.TrimSpace(line)
		}
	}
	return ""
}

// The limits refuse with a reply the client sees; the operator sees them
// on /metrics too: idempotency keys refused past --keys-max, with the
// limit beside the kept keys' gauge, and HTTP connections refused past
// --connections-max. Neither was counted: a shop at its keys limit saw
// only a rise of UNAVAILABLE replies among every other kind of refusal.
func TestLimitRefusalsAreCounted(t *testing.T) {
	s, _ := servedEngineWith(t, Config{RESPAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0", ConnectionsMax: 2},
		engine.Config{Durability: engine.DurabilityWrite, KeysMax: 1})
	nc, err := net.Dial("tcp", s.RESPAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(nc)
	for i, cmd := range []string{"RELEASE s w new own 1 ID k1", "RELEASE s w new own 1 ID k2", "RELEASE s w new own 1 ID k3"} {
		fmt.Fprintf(nc, "%s\r\n", cmd)
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if refused := strings.HasPrefix(line, "-UNAVAILABLE "); refused != (i > 0) {
			t.Fatalf("%s: %q", cmd, line)
		}
	}

	// Two HTTP connections held open; a third is refused with 503.
	for range 2 {
		c, err := net.Dial("tcp", s.HTTPAddr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("GET /healthz: %v %v", resp, err)
		}
		resp.Body.Close()
	}
	third, err := net.Dial("tcp", s.HTTPAddr())
	if err != nil {
		t.Fatal(err)
	}
	third.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(third, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(third), nil)
	if err != nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("third connection: %v %v, want 503", resp, err)
	}
	third.Close()

	// The metrics through a server of their own would be another
	// connection: read them from the collector directly.
	rec := httptest.NewRecorder()
	s.httpMetrics(rec, httptest.NewRequest("GET", "/metrics", nil))
	text := rec.Body.String()
	for name, want := range map[string]string{
		"allot_idempotency_keys_refused_total":  "2",
		"allot_idempotency_keys_max":            "1",
		"allot_http_connections_rejected_total": "1",
	} {
		if got := metricLine(text, name); got != name+" "+want {
			t.Errorf("metrics: %q, want %q", got, name+" "+want)
		}
	}
}
