package server_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"allot/inventory"
	"allot/server"
	"allot/server/servertest"
)

// HEAD /v1/changes is routed to the stream's GET handler: it must answer
// the headers and end, not run a stream nobody can read. A HEAD response
// has no body, so a client reuses the connection at once: a handler that
// goes on streaming left the next request on it waiting forever (and a
// goroutine serving nobody until the client went away).
func TestChangesHEADEnds(t *testing.T) {
	s := servertest.Start(t, servertest.Options{})
	if _, err := s.Engine.Stock(inventory.RowKey{SKU: "s", Warehouse: "w", Condition: "c", Source: "o"}, 1, 1); err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{MaxConnsPerHost: 1}
	defer tr.CloseIdleConnections()
	cl := &http.Client{Transport: tr}
	for _, after := range []string{"0", "1"} { // behind the newest event, and at it
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodHead, "http://"+s.HTTPAddr()+"/v1/changes?after="+after, nil)
		resp, err := cl.Do(req)
		if err != nil {
			cancel()
			t.Fatalf("HEAD after=%s: %v", after, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
			t.Errorf("HEAD after=%s: %d %q, want 200 text/event-stream", after, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		req, _ = http.NewRequestWithContext(ctx, http.MethodGet, "http://"+s.HTTPAddr()+"/healthz", nil)
		resp, err = cl.Do(req)
		if err != nil {
			cancel()
			t.Fatalf("a request on the connection after HEAD /v1/changes?after=%s: %v (the HEAD's handler is still streaming)", after, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		cancel()
	}
	// A HEAD answers the statuses a GET would.
	req, _ := http.NewRequest(http.MethodHead, "http://"+s.HTTPAddr()+"/v1/changes?after=5", nil)
	resp, err := cl.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("HEAD after a cursor past the newest: %d, want 400", resp.StatusCode)
	}
}

// A client that closes its connection while its CHANGES waits (BLOCK) is
// gone: the wait ends, and the connection with its slot
// (Config.ConnectionsMax) is freed, as Redis frees a blocked client that
// disconnects. It held both for the rest of the BLOCK (up to 60 s): two
// such clients made every new one "-ERR max number of clients reached".
func TestChangesBlockedClientGoneFreesItsConnection(t *testing.T) {
	for _, io := range []string{server.RESPIOLoop, server.RESPIOGoroutine} {
		t.Run(io, func(t *testing.T) {
			s := servertest.Start(t, servertest.Options{Config: server.Config{ConnectionsMax: 2, RESPIO: io}})
			for i := 0; i < 2; i++ {
				w := dialWire(t, s.RESPAddr())
				w.send(command("CHANGES", "0", "BLOCK", "60000"))
				time.Sleep(50 * time.Millisecond) // the CHANGES is waiting
				w.nc.Close()
			}
			var got string
			var w *wire
			for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
				w = dialWire(t, s.RESPAddr())
				w.send(command("PING"))
				if got = w.reply(); got == "+PONG\r\n" {
					break
				}
				w.nc.Close()
			}
			if got != "+PONG\r\n" {
				t.Fatalf("5 s after two clients blocked in CHANGES went away, a new one gets %q: their connections are still held", got)
			}
			// A client still connected waits out its BLOCK as before.
			start := time.Now()
			w.send(command("CHANGES", "0", "BLOCK", "700"))
			if r := w.reply(); r != "*0\r\n" || time.Since(start) < 600*time.Millisecond {
				t.Fatalf("CHANGES 0 BLOCK 700: %q after %v", r, time.Since(start))
			}
		})
	}
}

// CHANGES <newest> BLOCK ms on a closed engine (allot serve shutting
// down, a cluster node ending its term) can never see an event: it is
// refused, -UNAVAILABLE as every other request then is. It answered an
// empty array at once, as if the wait had timed out, and a consumer that
// follows with BLOCK then spun, asking again and again without a pause.
func TestChangesBlockOnAClosedEngineIsUnavailable(t *testing.T) {
	s := servertest.Start(t, servertest.Options{NoHTTP: true})
	if _, err := s.Engine.Stock(inventory.RowKey{SKU: "s", Warehouse: "w", Condition: "c", Source: "o"}, 1, 1); err != nil {
		t.Fatal(err)
	}
	if err := s.Engine.Close(); err != nil {
		t.Fatal(err)
	}
	w := dialWire(t, s.RESPAddr())
	w.send(command("CHANGES", "1", "BLOCK", "2000"))
	if got := w.reply(); !strings.HasPrefix(got, "-UNAVAILABLE ") {
		t.Errorf("CHANGES 1 BLOCK 2000 on a closed engine: %q, want -UNAVAILABLE (refused)", got)
	}
	// The history on disk is still read; nothing newer without BLOCK is
	// the empty array it always was.
	w.send(command("CHANGES", "0"))
	if got := w.reply(); !strings.HasPrefix(got, "*1\r\n") {
		t.Errorf("CHANGES 0 on a closed engine: %q, want its one event", got)
	}
	w.send(command("CHANGES", "1"))
	if got := w.reply(); got != "*0\r\n" {
		t.Errorf("CHANGES 1 on a closed engine: %q, want *0", got)
	}
}
