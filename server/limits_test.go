package server_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"allot/inventory"
	"allot/server"
	"allot/server/servertest"
)

// An SSE stream holds a reader slot, and a follower (a copy of the
// inventory rebuilt from the journal), only while it reads: streams that
// caught up and wait for the next event hold neither, so far more of them
// than the slots are served at once, without a copy of the inventory
// each (TestChangesWaitsForAReaderSlot and TestSSEAtTheReaderBoundIsRefused
// cover the slots' bound).
func TestIdleChangeStreamsAreBoundedInMemory(t *testing.T) {
	s := servertest.Start(t, servertest.Options{})
	for i := 0; i < 20000; i++ {
		k := inventory.RowKey{SKU: fmt.Sprintf("sku-%06d", i), Warehouse: "w1", Condition: "new", Source: "own"}
		if _, err := s.Engine.Stock(k, 5, 100); err != nil {
			t.Fatal(err)
		}
	}
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapInuse
	}
	// One stream first, so that the feed's idle follower and its recent
	// events are in the baseline.
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 0, DisableKeepAlives: true}}
	after := s.Engine.DurableLSN() - 100
	url := fmt.Sprintf("http://%s/v1/changes?after=%d", s.HTTPAddr(), after)
	var open []*http.Response
	defer func() {
		for _, r := range open {
			r.Body.Close()
		}
	}()
	get := func() *http.Response {
		t.Helper()
		resp, err := client.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			t.Fatalf("stream %d: %d %s", len(open)+1, resp.StatusCode, body)
		}
		open = append(open, resp)
		return resp
	}
	get()
	base := heap()
	const streams = 200
	for len(open) < streams {
		get()
	}
	grew := float64(heap()-min(base, heap())) / (1 << 20)
	t.Logf("%d open SSE streams on a 20,000-row inventory: heap +%.0f MB", streams, grew)
	if grew > 100 {
		t.Fatalf("heap grew %.0f MB with %d SSE streams open: a copy of the inventory per stream", grew, streams)
	}
}

// Many RESP connections block in CHANGES at one cursor, and one event wakes
// them all: each read needs a follower, a copy of the inventory, and the
// server must not build one per connection (64 readers of a 20,000-row
// inventory took 830 MB; then 319 MB with 16 reader slots; one follower
// now serves them all). Every reader still gets its event.
func TestChangesHerdIsBoundedInMemory(t *testing.T) {
	s := servertest.Start(t, servertest.Options{})
	for i := 0; i < 20000; i++ {
		k := inventory.RowKey{SKU: fmt.Sprintf("sku-%06d", i), Warehouse: "w1", Condition: "new", Source: "own"}
		if _, err := s.Engine.Stock(k, 5, 100); err != nil {
			t.Fatal(err)
		}
	}
	after := s.Engine.DurableLSN()
	heap := func() uint64 {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapInuse
	}
	runtime.GC()
	base := heap()

	const readers = 64
	var wg sync.WaitGroup
	replies := make([]string, readers)
	for i := range readers {
		nc, err := net.Dial("tcp", s.RESPAddr())
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		nc.SetDeadline(time.Now().Add(60 * time.Second))
		fmt.Fprintf(nc, "CHANGES %d BLOCK 60000\r\n", after)
		wg.Add(1)
		go func() {
			defer wg.Done()
			br := bufio.NewReader(nc)
			line, err := br.ReadString('\n')
			if err != nil {
				replies[i] = err.Error()
				return
			}
			replies[i] = strings.TrimSpace(line)
		}()
	}
	time.Sleep(300 * time.Millisecond) // let every reader block
	var peak atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			if h := heap(); h > peak.Load() {
				peak.Store(h)
			}
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	if _, err := s.Engine.Stock(inventory.RowKey{SKU: "new", Warehouse: "w1", Condition: "new", Source: "own"}, 1, 1); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(stop)
	<-sampled
	for i, r := range replies {
		if r != "*1" {
			t.Fatalf("reader %d got %q, want its one event (*1)", i, r)
		}
	}
	grew := float64(peak.Load()-min(base, peak.Load())) / (1 << 20)
	t.Logf("heap grew %.0f MB at most while %d readers read one event", grew, readers)
	if grew > 120 {
		t.Fatalf("heap grew %.0f MB while %d CHANGES readers woke at once: a follower (a copy of the inventory) per reader", grew, readers)
	}
}

// A CHANGES that finds every reader slot taken (here held by the test, as
// readers being served would) waits for one to free, and is refused with
// -UNAVAILABLE naming the limit when none does in time. (Idle SSE streams
// hold none: TestIdleSSEStreamsHoldNoReaderSlot.)
func TestChangesWaitsForAReaderSlot(t *testing.T) {
	const streams = 3
	s := servertest.Start(t, servertest.Options{Config: server.Config{ChangeStreamsMax: streams}})
	if _, err := s.Engine.Stock(inventory.RowKey{SKU: "s", Warehouse: "w", Condition: "c", Source: "o"}, 1, 1); err != nil {
		t.Fatal(err)
	}
	release := server.HoldChangeSlots(s.Server, streams)
	nc, err := net.Dial("tcp", s.RESPAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	br := bufio.NewReader(nc)
	nc.SetDeadline(time.Now().Add(30 * time.Second))
	start := time.Now()
	fmt.Fprintf(nc, "CHANGES 0\r\n")
	line, err := br.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "-UNAVAILABLE ") || !strings.Contains(line, "change streams max") {
		t.Fatalf("CHANGES with every slot taken: %q %v, want -UNAVAILABLE naming the limit", line, err)
	}
	if waited := time.Since(start); waited < 5*time.Second {
		t.Fatalf("refused after %v: a CHANGES should wait for a slot first", waited)
	}

	fmt.Fprintf(nc, "CHANGES 0\r\n")
	time.Sleep(200 * time.Millisecond)
	release() // frees the slots: the waiting CHANGES goes on
	line, err = br.ReadString('\n')
	if err != nil || line != "*1\r\n" {
		t.Fatalf("CHANGES after a slot freed: %q %v, want its one event", line, err)
	}
}

// A connection that once read a large CHANGES reply must not keep the
// reply's buffers for the rest of its life: 40 idle followers that each
// read 10,000 events pinned two copies of a 1.5 MB reply apiece.
func TestLargeRepliesAreNotKeptByIdleConnections(t *testing.T) {
	s := servertest.Start(t, servertest.Options{})
	for i := 0; i < 10000; i++ {
		k := inventory.RowKey{SKU: fmt.Sprintf("sku-%06d", i), Warehouse: "w1", Condition: "new", Source: "own"}
		if _, err := s.Engine.Stock(k, 5, 100); err != nil {
			t.Fatal(err)
		}
	}
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapInuse
	}
	// One read first, so that the feed's idle follower is in the baseline.
	if got := rawRESP(t, s.RESPAddr(), "CHANGES", "0", "COUNT", "1"); got != "*1" {
		t.Fatalf("CHANGES 0 COUNT 1: %q", got)
	}
	base := heap()
	const conns = 40
	replyBytes := 0
	for range conns {
		nc, err := net.Dial("tcp", s.RESPAddr())
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		nc.SetDeadline(time.Now().Add(30 * time.Second))
		fmt.Fprintf(nc, "CHANGES 0 COUNT 10000\r\n")
		br := bufio.NewReader(nc)
		n := 0
		line, err := br.ReadString('\n')
		if err != nil || line != "*10000\r\n" {
			t.Fatalf("CHANGES 0 COUNT 10000: %q %v", line, err)
		}
		for range 2 * 10000 {
			l, err := br.ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			n += len(l)
		}
		replyBytes = n
	}
	grew := float64(heap()-min(base, heap())) / (1 << 20)
	t.Logf("%d idle connections after a %.1f MB reply each: heap +%.1f MB", conns, float64(replyBytes)/(1<<20), grew)
	if limit := float64(conns) * float64(replyBytes) / (1 << 20) / 2; grew > limit {
		t.Fatalf("%d idle connections keep %.1f MB after their large replies were written", conns, grew)
	}
}

// --help documents the limits a client can meet: the change-stream bound
// with its variable, and that connections-max bounds HTTP too.
func TestServeHelpNamesTheLimits(t *testing.T) {
	out, err := exec.Command(servertest.BuildAllot(t), "serve", "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("serve --help: %v\n%s", err, out)
	}
	if !regexp.MustCompile(`(?m)^  -change-streams-max( |$)`).Match(out) || !strings.Contains(string(out), "(env ALLOT_CHANGE_STREAMS_MAX)") {
		t.Errorf("--help lacks -change-streams-max or ALLOT_CHANGE_STREAMS_MAX:\n%s", out)
	}
	if !regexp.MustCompile(`(?m)^  -connections-max .*\n.*HTTP`).Match(out) {
		t.Errorf("--help does not say that -connections-max bounds HTTP connections too:\n%s", out)
	}
}
