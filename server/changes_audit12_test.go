package server_test

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"allot/inventory"
	"allot/server"
	"allot/server/servertest"
)

// sseStream is an open GET /v1/changes whose events the test reads.
type sseStream struct {
	resp *http.Response
	br   *bufio.Reader
}

func openSSE(t *testing.T, addr, after string) *sseStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "GET", "http://"+addr+"/v1/changes?after="+after, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); resp.Body.Close() })
	return &sseStream{resp: resp, br: bufio.NewReader(resp.Body)}
}

// waitID reads the stream until the event with id seq, failing after 10 s.
func (s *sseStream) waitID(t *testing.T, seq string) {
	t.Helper()
	got := make(chan error, 1)
	go func() {
		for {
			line, err := s.br.ReadString('\n')
			if err != nil {
				got <- err
				return
			}
			if strings.TrimRight(line, "\n") == "id: "+seq {
				got <- nil
				return
			}
		}
	}()
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("stream ended before event %s: %v", seq, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("no event %s on the stream within 10 s", seq)
	}
}

// Idle SSE streams that follow live hold no reader slot: with more of them
// open than ChangeStreamsMax, a RESP CHANGES that must read through a
// follower and one more SSE stream are served at once, and every idle
// stream still gets the next event.
func TestIdleSSEStreamsHoldNoReaderSlot(t *testing.T) {
	const slots, idle = 2, 5
	s := servertest.Start(t, servertest.Options{Config: server.Config{ChangeStreamsMax: slots}})
	row := inventory.RowKey{SKU: "s", Warehouse: "w", Condition: "c", Source: "o"}
	if _, err := s.Engine.Stock(row, 1, 1); err != nil {
		t.Fatal(err)
	}
	var streams []*sseStream
	for i := range idle {
		st := openSSE(t, s.HTTPAddr(), "0")
		if st.resp.StatusCode != http.StatusOK {
			t.Fatalf("idle stream %d of %d with %d reader slots: %s", i+1, idle, slots, st.resp.Status)
		}
		st.waitID(t, "1")
		streams = append(streams, st)
	}
	start := time.Now()
	if got := rawRESP(t, s.RESPAddr(), "CHANGES", "0"); got != "*1" {
		t.Fatalf("CHANGES 0 with %d idle SSE streams open: %q after %v, want its one event", idle, got, time.Since(start))
	}
	if waited := time.Since(start); waited > 5*time.Second {
		t.Fatalf("CHANGES waited %v for a reader slot while the streams were idle", waited)
	}
	one := openSSE(t, s.HTTPAddr(), "0")
	if one.resp.StatusCode != http.StatusOK {
		t.Fatalf("one more SSE stream: %s", one.resp.Status)
	}
	one.waitID(t, "1")
	if _, err := s.Engine.Stock(row, 2, 1); err != nil {
		t.Fatal(err)
	}
	for _, st := range append(streams, one) {
		st.waitID(t, "2")
	}
}

// A stream that starts behind the newest event takes a slot for its first
// read: with every slot taken it is refused with 503 and Retry-After, as
// before, never left waiting without a status.
func TestSSEAtTheReaderBoundIsRefused(t *testing.T) {
	s := servertest.Start(t, servertest.Options{Config: server.Config{ChangeStreamsMax: 1}})
	if _, err := s.Engine.Stock(inventory.RowKey{SKU: "s", Warehouse: "w", Condition: "c", Source: "o"}, 1, 1); err != nil {
		t.Fatal(err)
	}
	release := server.HoldChangeSlots(s.Server, 1)
	st := openSSE(t, s.HTTPAddr(), "0")
	if st.resp.StatusCode != http.StatusServiceUnavailable || st.resp.Header.Get("Retry-After") == "" {
		t.Fatalf("a stream with every reader slot taken: %s, Retry-After %q", st.resp.Status, st.resp.Header.Get("Retry-After"))
	}
	release()
	st = openSSE(t, s.HTTPAddr(), "0")
	if st.resp.StatusCode != http.StatusOK {
		t.Fatalf("a stream once the slot is free: %s", st.resp.Status)
	}
	st.waitID(t, "1")
}
