package engine

import (
	"testing"
	"time"

	"allot/inventory"
	"allot/vfs"
)

// TestKickDoesNotOutliveTheFlusher: a wake-up for the flusher (a kick) is
// never waited for after the flusher is gone. The kick channel holds one
// kick; a kick can be left in it while e.kicked says none is (a Submit
// that set kicked, let the lock go and sent only after the flusher's flush
// had already reset kicked and taken its request, with the flusher woken
// by the gather's timer). The next Submit that kicks then blocks in the
// send until the flusher comes round again; when Close came meanwhile and
// the flusher chose stop over that kick, it never comes: the Submit (its
// request applied and answered by the flusher's last flush) never
// returned, and a ticker blocked so hung Close itself. The test sets up
// that leftover kick directly (the interleaving that leaves it is a
// preemption between two lines) and repeats, since the flusher's select
// picks stop or the kick at random.
func TestKickDoesNotOutliveTheFlusher(t *testing.T) {
	for i := range 12 {
		fs := vfs.NewFaulty(vfs.NewMem())
		e := mustOpen(t, Config{Dir: "/d", FS: fs, TickInterval: -1})
		must(e.Stock(rk("a", "w1"), 10, 1))
		held, release := fs.HoldSyncs("")
		r1 := NewRequest()
		r1.Op = inventory.Release(rk("a", "w1"), 1)
		if err := e.Submit(r1); err != nil {
			t.Fatal(err)
		}
		<-held // the flusher is in r1's fdatasync, kicked reset
		e.mu.Lock()
		if e.kicked {
			t.Fatal("kicked set while the flusher syncs")
		}
		e.kick <- struct{}{} // the leftover kick
		e.mu.Unlock()
		r2 := NewRequest()
		r2.Op = inventory.Release(rk("a", "w1"), 1)
		submitted := make(chan error, 1)
		go func() { submitted <- e.Submit(r2) }()
		for {
			e.mu.Lock()
			queued := len(e.waiting) == 1
			e.mu.Unlock()
			if queued {
				break
			}
			time.Sleep(time.Millisecond)
		}
		closed := make(chan error, 1)
		go func() { closed <- e.Close() }()
		for {
			e.mu.Lock()
			c := e.closed
			e.mu.Unlock()
			if c {
				break
			}
			time.Sleep(time.Millisecond)
		}
		time.Sleep(5 * time.Millisecond) // Close is waiting for the flusher
		release(nil)
		select {
		case err := <-submitted:
			if err != nil {
				t.Fatalf("round %d: Submit of a request applied before Close: %v", i, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("round %d: Submit still blocked 5s after Close, its request applied", i)
		}
		if err := r2.Wait(); err != nil {
			t.Fatalf("round %d: r2: %v", i, err)
		}
		if err := r1.Wait(); err != nil {
			t.Fatalf("round %d: r1: %v", i, err)
		}
		if err := <-closed; err != nil {
			t.Fatal(err)
		}
	}
}
