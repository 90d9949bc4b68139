package engine

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"allot/inventory"
	"allot/journal"
	"allot/vfs"
)

// TestNonePendingFrameIsBounded: in none mode the pending frame never holds
// more than NoneFlushBytes and one op, whoever fills it. Thousands of holds
// expire by Tick while the clock stands still (no new millisecond writes
// the frame), the case that once grew it without a bound.
func TestNonePendingFrameIsBounded(t *testing.T) {
	const flushBytes, holds = 2048, 6000
	clock := newFakeClock()
	e := mustOpen(t, Config{Dir: t.TempDir(), Durability: DurabilityNone, Clock: clock, TickInterval: -1, NoneFlushBytes: flushBytes})
	defer e.Close()
	// opMax bounds one op's encoding here: a hold of one line with a short
	// id, or its expiry.
	const opMax = 256
	most := 0
	look := func() {
		e.mu.Lock()
		most = max(most, e.journal.PendingBytes())
		e.mu.Unlock()
	}
	must(e.Stock(rk("a", "w1"), holds, 1))
	lines := []inventory.Demand{{Group: gk("a"), N: 1}}
	for i := range holds {
		if res := must(e.Hold(fmt.Sprintf("h%d", i), time.Second, lines)); res.Code != inventory.CodeOK {
			t.Fatalf("hold %d: %+v", i, res)
		}
		look()
	}
	clock.Advance(time.Second)
	for {
		backlog, err := e.Tick()
		if err != nil {
			t.Fatal(err)
		}
		look()
		if !backlog {
			break
		}
	}
	if s := e.Stats().State; s.Expired != holds {
		t.Fatalf("%d holds expired, want %d", s.Expired, holds)
	}
	if most > flushBytes+opMax {
		t.Fatalf("the pending frame held %d bytes, over NoneFlushBytes %d and one op", most, flushBytes)
	}
	if most < flushBytes/2 {
		t.Fatalf("the pending frame never held more than %d bytes: the test filled nothing", most)
	}
}

// TestFsyncPendingFrameIsBounded: while the flusher is inside a slow
// fdatasync, the frame the writer builds for the next one holds at most
// FrameBytesMax and one op: an expiry storm (Tick) and many submitters
// wait for the flusher instead of growing it, and all of them complete
// once the disk answers.
func TestFsyncPendingFrameIsBounded(t *testing.T) {
	const frameMax, holds, submitters, opMax = 2048, 3000, 64, 256
	fs := &hookFS{FS: vfs.NewMem()}
	clock := newFakeClock()
	e := mustOpen(t, Config{Dir: "/d", FS: fs, Clock: clock, TickInterval: -1, QueueMax: 1 << 20, FrameBytesMax: frameMax})
	defer e.Close()
	must(e.Stock(rk("a", "w1"), holds, 1))
	for i := range holds {
		if res := must(e.Hold(fmt.Sprintf("h%d", i), time.Second, []inventory.Demand{{Group: gk("a"), N: 1}})); res.Code != inventory.CodeOK {
			t.Fatalf("hold %d: %+v", i, res)
		}
	}
	inSync, release := make(chan struct{}), make(chan struct{})
	var once, released sync.Once
	hook := func() {
		once.Do(func() {
			close(inSync)
			<-release
		})
	}
	fs.onSync.Store(&hook)
	defer released.Do(func() { close(release) }) // a failed check must not leave Close waiting
	first := NewRequest()
	first.Op = inventory.Release(rk("a", "w1"), 1)
	if err := e.Submit(first); err != nil {
		t.Fatal(err)
	}
	<-inSync // the flusher holds its fdatasync until release

	clock.Advance(time.Second)
	ticked := make(chan error, 1)
	go func() {
		for {
			backlog, err := e.Tick()
			if err != nil || !backlog {
				ticked <- err
				return
			}
		}
	}()
	waitBlocked(t, "engine.(*Engine).Tick", 1) // the expiries filled the frame
	var wg sync.WaitGroup
	for range submitters {
		wg.Go(func() {
			if res, err := e.Release(rk("a", "w1"), 1); err != nil || res.Code != inventory.CodeOK {
				t.Errorf("release: %+v %v", res, err)
			}
		})
	}
	waitBlocked(t, "engine.(*Engine).Submit", submitters)
	e.mu.Lock()
	pending := e.journal.PendingBytes()
	e.mu.Unlock()
	if pending > frameMax+opMax {
		t.Errorf("the pending frame holds %d bytes during the sync, over FrameBytesMax %d and one op", pending, frameMax)
	}
	if pending < frameMax {
		t.Errorf("the pending frame holds %d bytes: the test never filled it to %d", pending, frameMax)
	}
	released.Do(func() { close(release) })
	wg.Wait()
	if err := first.Wait(); err != nil {
		t.Fatal(err)
	}
	if err := <-ticked; err != nil {
		t.Fatal(err)
	}
	if s := e.Stats().State; s.Expired != holds {
		t.Fatalf("%d holds expired, want %d", s.Expired, holds)
	}
	if got := must(e.Available(gk("a"))).Count; got != holds+1+submitters {
		t.Fatalf("available %d, want %d", got, holds+1+submitters)
	}
}

// TestFrameBoundsAreChecked: a frame bound over what recovery reads is
// refused at Open, naming the field.
func TestFrameBoundsAreChecked(t *testing.T) {
	for _, cfg := range []Config{
		{Dir: t.TempDir(), FrameBytesMax: journal.FramePayloadMax},
		{Dir: t.TempDir(), NoneFlushBytes: journal.FramePayloadMax},
		{Dir: t.TempDir(), FrameBytesMax: -1},
	} {
		_, err := Open(cfg)
		if err == nil || !strings.Contains(err.Error(), "Bytes") {
			t.Errorf("%+v: Open = %v, want an error naming the bound", cfg, err)
		}
	}
}
