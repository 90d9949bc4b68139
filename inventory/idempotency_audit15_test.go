package inventory

import (
	"fmt"
	"testing"
)

// TestCollectKeysDrainsEveryChunkPastTheWindow: the engine calls
// CollectKeys when the keys kept reach its limit and a new key would be
// refused. A table of several chunks, every key past the window (what
// replay rebuilds: it never collects), must drain in that one call, not a
// chunk per call: else the new key is refused though no kept key is
// within the window.
func TestCollectKeysDrainsEveryChunkPastTheWindow(t *testing.T) {
	s := NewState()
	s.SetRetention(ReplayRetentionMS) // replay
	s.SetTime(1)
	g := gk("none")
	for i := range 150_000 {
		op := Capture(g, 1)
		op.IdempotencyKey = fmt.Sprint("k", i)
		if res := s.Apply(&op, nil); !res.Changed {
			t.Fatalf("key %d: %+v", i, res)
		}
	}
	if len(s.keys.chunks) < 3 {
		t.Fatalf("%d chunks: the test wants several", len(s.keys.chunks))
	}
	s.SetRetention(100) // recovered: the configured window rules
	s.SetTime(1000)
	s.CollectKeys()
	if n := s.KeysKept(); n != 0 {
		t.Fatalf("KeysKept %d after CollectKeys, every key past the window; want 0", n)
	}
}
