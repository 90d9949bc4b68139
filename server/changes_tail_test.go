package server_test

import (
	"bufio"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"allot/inventory"
	"allot/server/servertest"
)

// SSE streams that follow the stream live read the same events: they share
// one follower (a copy of the inventory), where each stream held its own
// for as long as it was open (16 streams of a 20,000-row inventory: 300 MB
// and more).
func TestLiveSSEStreamsShareAFollower(t *testing.T) {
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
	base := heap()
	after := s.Engine.DurableLSN()
	const streams = 16
	var readers []*bufio.Reader
	for range streams {
		resp, err := http.Get(fmt.Sprintf("http://%s/v1/changes?after=%d", s.HTTPAddr(), after))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("stream: %d", resp.StatusCode)
		}
		readers = append(readers, bufio.NewReader(resp.Body))
	}
	const events = 20
	for n := 0; n < events; n++ {
		k := inventory.RowKey{SKU: fmt.Sprintf("sku-%06d", n), Warehouse: "w1", Condition: "new", Source: "own"}
		if _, err := s.Engine.Stock(k, 6, 100); err != nil {
			t.Fatal(err)
		}
		for i, br := range readers {
			id, err := br.ReadString('\n')
			if want := fmt.Sprintf("id: %d\n", after+uint64(n)+1); err != nil || id != want {
				t.Fatalf("stream %d: %q %v, want %q", i, id, err, want)
			}
			if data, err := br.ReadString('\n'); err != nil || !strings.HasPrefix(data, "data: {") {
				t.Fatalf("stream %d: %q %v", i, data, err)
			}
			br.ReadString('\n')
		}
	}
	time.Sleep(100 * time.Millisecond)
	grew := float64(heap()-min(base, heap())) / (1 << 20)
	t.Logf("%d SSE streams at the newest seq, %d events each: heap +%.0f MB", streams, events, grew)
	if grew > 120 {
		t.Fatalf("%d SSE streams following live hold %.0f MB: a copy of the inventory each", streams, grew)
	}
}
