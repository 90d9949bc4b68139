package server

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"allot/engine"
)

// Past engine.Config.KeysMax a request with a new key gets the refused
// class on both protocols (-UNAVAILABLE naming the limit; HTTP 503
// unavailable, applied false) and changes nothing: no row, no key, no
// event. Repeats of kept keys are answered as before.
func TestKeysMaxOverTheWire(t *testing.T) {
	s, e := servedEngineWith(t, Config{RESPAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0"}, engine.Config{Durability: engine.DurabilityFsync, KeysMax: 2})
	nc, err := net.Dial("tcp", s.RESPAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(nc)
	send := func(cmd string) string {
		t.Helper()
		if _, err := fmt.Fprintf(nc, "%s\r\n", cmd); err != nil {
			t.Fatal(err)
		}
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimRight(line, "\r\n")
	}
	if got := send("STOCK.SET s w new own 10 1 ID k1"); got != "+OK" {
		t.Fatalf("STOCK.SET with k1: %q", got)
	}
	if got := send("RELEASE s w new own 1 ID k2"); got != ":11" {
		t.Fatalf("RELEASE with k2: %q", got)
	}
	for _, cmd := range []string{"RELEASE s w new own 1 ID k3", "STOCK.SET s w2 new own 5 1 ID k3"} {
		got := send(cmd)
		if !strings.HasPrefix(got, "-UNAVAILABLE ") || !strings.Contains(got, "2 idempotency keys") || !strings.Contains(got, "--keys-max") {
			t.Fatalf("%s past the limit: %q, want -UNAVAILABLE naming the limit", cmd, got)
		}
	}
	if got := send("RELEASE s w new own 1 ID k2"); got != ":11" {
		t.Fatalf("a repeat of k2: %q, want its first reply", got)
	}
	if got := send("RELEASE s w new own 1"); got != ":12" {
		t.Fatalf("a RELEASE without a key: %q", got)
	}

	req, _ := http.NewRequest("POST", "http://"+s.HTTPAddr()+"/v1/release", strings.NewReader(`{"sku":"s","warehouse":"w","condition":"new","source":"own","quantity":1}`))
	req.Header.Set("Idempotency-Key", "k4")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), `"error":"unavailable"`) ||
		!strings.Contains(string(body), `"applied":false`) || !strings.Contains(string(body), "--keys-max") {
		t.Fatalf("HTTP release with a new key past the limit: %d %s", resp.StatusCode, body)
	}

	if got := send("STOCK.GET s w2 new own"); got != "*-1" && got != "$-1" {
		t.Fatalf("the refused STOCK.SET made a row: %q", got)
	}
	if got := send("STOCK.GET s w new own"); got != "*2" {
		t.Fatalf("STOCK.GET: %q", got)
	}
	if got, _ := br.ReadString('\n'); got != ":12\r\n" {
		t.Fatalf("count %q after refused releases, want 12", got)
	}
	br.ReadString('\n') // the price
	// Three events: the stock, the keyed release, the release without a key.
	if got := send("CHANGES 0"); got != "*3" {
		t.Fatalf("CHANGES 0: %q, want the three applied ops only", got)
	}
	if n := e.Stats().State.Keys; n != 2 {
		t.Fatalf("%d keys kept, want 2", n)
	}
}
