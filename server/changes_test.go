package server_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"allot/changes"
	"allot/client"
	"allot/engine"
	"allot/inventory"
	"allot/server"
	"allot/server/servertest"
)

// rawRESP sends one command line as a RESP array and returns the reply's
// first line.
func rawRESP(t *testing.T, addr string, args ...string) string {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	cmd := fmt.Sprintf("*%d\r\n", len(args))
	for _, a := range args {
		cmd += fmt.Sprintf("$%d\r\n%s\r\n", len(a), a)
	}
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := nc.Write([]byte(cmd)); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(nc).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimRight(line, "\r\n")
}

// Over the wire: CHANGES from 0 rebuilds the server's rows, holds and
// expiries included; the same events arrive over SSE.
func TestChangesOverTheWire(t *testing.T) {
	s, cl := fsyncServerClient(t)
	ctx := context.Background()
	row := func(w string) inventory.RowKey {
		return inventory.RowKey{SKU: "sku1", Warehouse: w, Condition: "new", Source: "own"}
	}
	g := row("").Group()
	for _, w := range []string{"w2", "w1"} {
		if _, err := cl.Stock(ctx, row(w), 5, 100); err != nil {
			t.Fatal(err)
		}
	}
	mustDo := func(op inventory.Op) {
		t.Helper()
		if res, err := cl.Do(ctx, op, nil); err != nil || res.Code != inventory.CodeOK {
			t.Fatalf("%s: %v %v", op.Kind, res.Code, err)
		}
	}
	capture := inventory.Capture(g, 6)
	capture.IdempotencyKey = "c1"
	mustDo(capture)
	mustDo(capture) // a repeat: no event
	mustDo(inventory.Hold("h-expires", 30, []inventory.Demand{{Group: g, N: 1}}))
	mustDo(inventory.Hold("h-confirmed", 60000, []inventory.Demand{{Group: g, N: 1}}))
	mustDo(inventory.Confirm("h-confirmed"))
	mustDo(inventory.Release(row("w1"), 2))

	// Block until the expiry's event arrives. On a slow machine the
	// 30 ms hold may expire before the confirm or the release: the expiry
	// may sit anywhere after its hold.
	var events []changes.Event
	expired := false
	deadline := time.Now().Add(5 * time.Second)
	for !(expired && len(events) >= 8) && time.Now().Before(deadline) {
		evs, err := cl.Changes(ctx, uint64(len(events)), 2, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			expired = expired || ev.Op == "expire"
		}
		events = append(events, evs...)
	}
	var ops []string
	byOp := map[string]changes.Event{}
	for i, ev := range events {
		if ev.Seq != uint64(i+1) {
			t.Fatalf("event %d has seq %d", i, ev.Seq)
		}
		if ev.Op == "expire" {
			if i < 3 || events[3].Hold != "h-expires" {
				t.Fatalf("expiry at %d, before its hold: %+v", i, events)
			}
		} else {
			ops = append(ops, ev.Op)
		}
		byOp[ev.Op] = ev
	}
	if got, want := strings.Join(ops, " "), "stock stock capture hold hold confirm release"; got != want || !expired {
		t.Fatalf("ops %q and an expiry (%v), want %q", got, expired, want)
	}
	if ev := byOp["capture"]; ev.Key != "c1" || len(ev.Rows) != 2 || ev.Rows[0].Warehouse != "w1" || ev.Rows[0].Delta != -5 || ev.Rows[1].Delta != -1 {
		t.Errorf("capture event %+v", ev)
	}
	if ev := byOp["confirm"]; ev.Hold != "h-confirmed" || len(ev.Rows) != 0 {
		t.Errorf("confirm event %+v", ev)
	}
	if ev := byOp["expire"]; ev.Hold != "h-expires" || len(ev.Rows) != 1 || ev.Rows[0].Delta != 1 {
		t.Errorf("expire event %+v", ev)
	}
	rows := map[inventory.RowKey]int64{}
	for _, ev := range events {
		for _, r := range ev.Rows {
			rows[r.Key()] = r.CountAfter
		}
	}
	want, err := s.Engine.Rows()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range want {
		if rows[r.Key] != r.Count {
			t.Errorf("row %v: the stream says %d, the server %d", r.Key, rows[r.Key], r.Count)
		}
	}

	// SSE: the same events, id = seq.
	resp, err := http.Get("http://" + s.HTTPAddr() + "/v1/changes?after=3")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("SSE: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	br := bufio.NewReader(resp.Body)
	for i := 3; i < len(events); i++ {
		id, _ := br.ReadString('\n')
		data, _ := br.ReadString('\n')
		blank, _ := br.ReadString('\n')
		wantData := string(events[i].AppendJSON(nil))
		if id != fmt.Sprintf("id: %d\n", events[i].Seq) || data != "data: "+wantData+"\n" || blank != "\n" {
			t.Fatalf("SSE event %d: %q %q %q, want data %s", i, id, data, blank, wantData)
		}
	}
	// A new mutation reaches the open stream.
	mustDo(inventory.Release(row("w2"), 1))
	id, _ := br.ReadString('\n')
	if id != fmt.Sprintf("id: %d\n", len(events)+1) {
		t.Fatalf("SSE after a new release: %q", id)
	}

	// A reconnecting EventSource asks for the same URL with the last id it
	// received: the stream resumes after the later of the two; a
	// Last-Event-ID before after does not take it back.
	for _, c := range []struct {
		url, lastID string
		first       int
	}{{"/v1/changes?after=3", "5", 6}, {"/v1/changes?after=5", "3", 6}, {"/v1/changes", "4", 5}, {"/v1/changes?after=2", "", 3}} {
		req, _ := http.NewRequest("GET", "http://"+s.HTTPAddr()+c.url, nil)
		if c.lastID != "" {
			req.Header.Set("Last-Event-ID", c.lastID)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		id, _ := bufio.NewReader(resp.Body).ReadString('\n')
		resp.Body.Close()
		if want := fmt.Sprintf("id: %d\n", c.first); id != want {
			t.Errorf("%s with Last-Event-ID %q: first %q, want %q", c.url, c.lastID, id, want)
		}
	}
	req, _ := http.NewRequest("GET", "http://"+s.HTTPAddr()+"/v1/changes?after=1", nil)
	req.Header.Set("Last-Event-ID", "x")
	resp, err = (&http.Client{Timeout: 5 * time.Second}).Do(req) // a stream would not end
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(string(body), "Last-Event-ID must be an integer") {
		t.Errorf("a Last-Event-ID that is no seq: %d %s, want 400 naming it", resp.StatusCode, body)
	}
}

func TestChangesBadInput(t *testing.T) {
	s := servertest.Start(t, servertest.Options{})
	for _, c := range [][]string{
		{"CHANGES"},
		{"CHANGES", "x"},
		{"CHANGES", "0", "COUNT", "0"},
		{"CHANGES", "0", "BLOCK", "60001"},
		{"CHANGES", "0", "COUNT", "5", "COUNT", "5"},
		{"CHANGES", "5"}, // past the newest seq
	} {
		if got := rawRESP(t, s.RESPAddr(), c...); !strings.HasPrefix(got, "-ERR ") {
			t.Errorf("%q: %q, want -ERR", c, got)
		}
	}
	if got := rawRESP(t, s.RESPAddr(), "CHANGES", "0", "BLOCK", "20"); got != "*0" {
		t.Errorf("CHANGES 0 BLOCK 20 on an empty server: %q, want *0", got)
	}
	for _, q := range []string{"after=x", "after=-1", "after=99", "bogus=1"} {
		resp, err := http.Get("http://" + s.HTTPAddr() + "/v1/changes?" + q)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 400 {
			t.Errorf("?%s: %d %s, want 400", q, resp.StatusCode, body)
		}
	}
}

// A cursor older than the journal keeps: -TRIMMED oldest <seq> and 410.
func TestChangesTrimmed(t *testing.T) {
	e, err := engine.Open(engine.Config{Dir: t.TempDir(), Durability: engine.DurabilityWrite, SegmentBytes: 4096, SnapshotEveryOps: 50, KeepSnapshots: 1})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Config{RESPAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0"}, e)
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve()
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		e.Close()
	}()
	for i := 0; i < 400; i++ {
		if _, err := e.Stock(inventory.RowKey{SKU: fmt.Sprint("s", i), Warehouse: "w", Condition: "c", Source: "x"}, 1, 1); err != nil {
			t.Fatal(err)
		}
	}
	var got string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if got = rawRESP(t, srv.RESPAddr(), "CHANGES", "0", "COUNT", "1"); strings.HasPrefix(got, "-TRIMMED oldest ") {
			break
		}
	}
	var oldest uint64
	if _, err := fmt.Sscanf(got, "-TRIMMED oldest %d", &oldest); err != nil || oldest < 2 {
		t.Fatalf("CHANGES 0 on a trimmed journal: %q", got)
	}
	cl, _ := client.New(client.Config{Addr: srv.RESPAddr()})
	defer cl.Close()
	_, err = cl.Changes(context.Background(), 0, 1, 0)
	var te *client.TrimmedError
	if !errors.As(err, &te) || te.Oldest < oldest {
		t.Fatalf("client: %v", err)
	}
	// The oldest readable op may be past the last one written (a snapshot
	// at the end trims everything: oldest 401 of 400), so a few more ops
	// give the read from the oldest something to return; and a snapshot
	// finishing meanwhile may move the oldest on, which the read then
	// reports as trimmed: read again from there.
	for i := 0; i < 5; i++ {
		if _, err := e.Stock(inventory.RowKey{SKU: fmt.Sprint("t", i), Warehouse: "w", Condition: "c", Source: "x"}, 1, 1); err != nil {
			t.Fatal(err)
		}
	}
	var evs []changes.Event
	for try := 0; ; try++ {
		evs, err = cl.Changes(context.Background(), te.Oldest-1, 1, 0)
		if !errors.As(err, &te) || try == 3 {
			break
		}
	}
	// Nothing past the newest op: a snapshot of the very end leaves the
	// oldest one past it, and the read is then rightly empty.
	want := 1
	if te.Oldest > e.DurableLSN() {
		want = 0
	}
	if err != nil || len(evs) != want || (want == 1 && evs[0].Seq != te.Oldest) {
		t.Fatalf("from the oldest (%d, newest %d): %v %v", te.Oldest, e.DurableLSN(), evs, err)
	}
	resp, err := http.Get("http://" + srv.HTTPAddr() + "/v1/changes?after=0")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 410 || !strings.HasPrefix(string(body), `{"error":"trimmed","oldest":`) {
		t.Fatalf("HTTP after=0: %d %s", resp.StatusCode, body)
	}
}
