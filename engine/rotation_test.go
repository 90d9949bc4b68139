package engine

import (
	"path"
	"strings"
	"testing"
	"time"

	"allot/inventory"
	"allot/vfs"
)

// In write mode a frame is written on the submitting goroutine, under the
// engine's lock, so a segment rotation runs on the request path. It must
// not wait for the full segment's fdatasync: with every sync of the first
// segment held, Submits go on across the boundary and are answered while
// that sync is still under way.
func TestWriteModeRotationDoesNotWaitForTheOldSegmentSync(t *testing.T) {
	fs := vfs.NewFaulty(vfs.NewMem())
	e := mustOpen(t, Config{Dir: "/d", FS: fs, Durability: DurabilityWrite, SegmentBytes: 4096, TickInterval: -1})
	// Only the first segment was made under its own name (the next ones
	// are spares renamed), so only its syncs are held: the spare is
	// prepared as usual.
	held, release := fs.HoldSyncs("journal-")
	defer release(nil)
	must(e.Stock(rk("a", "w1"), 0, 1))

	rotated := func() bool {
		names, _ := fs.List("/d")
		n := 0
		for _, name := range names {
			if strings.HasPrefix(name, "journal-") {
				n++
			}
		}
		return n > 1
	}
	done := make(chan int, 1)
	go func() {
		// Submit until the journal is in its second segment, and a few
		// more: every one answered.
		n, after := 0, 0
		for ; after < 5 && n < 10_000; n++ {
			if res, err := e.Release(rk("a", "w1"), 1); err != nil || res.Code != inventory.CodeOK {
				t.Errorf("release %d: %+v %v", n, res, err)
				break
			}
			if rotated() {
				after++
			}
		}
		done <- n
	}()
	var n int
	select {
	case n = <-done:
	case <-time.After(20 * time.Second):
		// Not a speed target: only a hang (Submit waiting for the held
		// fdatasync) gets here.
		t.Fatal("Submits stopped at the segment boundary: the rotation waited for the full segment's fdatasync")
	}
	if !rotated() {
		t.Fatalf("%d releases never crossed a segment boundary", n)
	}
	// The full segment's sync did start, and has not finished: every
	// answer above came while it was held.
	select {
	case name := <-held:
		if path.Base(name) != "journal-00000000000000000001.log" {
			t.Fatalf("held a sync of %s, want the first segment", name)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the full segment was never synced")
	}
	release(nil)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = mustOpen(t, Config{Dir: "/d", FS: fs, Durability: DurabilityWrite, SegmentBytes: 4096, TickInterval: -1})
	defer e.Close()
	if res := must(e.Get(rk("a", "w1"))); res.Count != int64(n) {
		t.Fatalf("after reopening the row holds %d, want the %d releases", res.Count, n)
	}
}
