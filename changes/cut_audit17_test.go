package changes_test

import (
	"sync"
	"testing"
	"time"

	"allot/changes"
	"allot/engine"
	"allot/inventory"
	"allot/vfs"
)

type stepClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *stepClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// TestFramesClosedAside: behind a slow fdatasync (fsync mode) the engine
// closes the open frame aside for one stamped later when a hold comes
// due, and writes both in one flush. The stream reads them as any other
// frames: gapless, each op at its own frame's stamp, the expiry at a
// stamp past the deadline, rows that rebuild the engine's.
func TestFramesClosedAside(t *testing.T) {
	clock := &stepClock{now: time.UnixMilli(1_700_000_000_000)}
	fs := vfs.NewFaulty(vfs.NewMem())
	e, err := engine.Open(engine.Config{Dir: "/d", FS: fs, Clock: clock, TickInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	row := inventory.RowKey{SKU: "a", Warehouse: "w1", Condition: "new", Source: "own"}
	if _, err := e.Stock(row, 10, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Hold("h1", 100*time.Millisecond, []inventory.Demand{{Group: row.Group(), N: 1}}); err != nil {
		t.Fatal(err)
	}
	t0 := clock.Now().UnixMilli()
	held, release := fs.HoldSyncs("")
	defer release(nil)
	submit := func() *engine.Request {
		r := engine.NewRequest()
		r.Op = inventory.Release(row, 1)
		if err := e.Submit(r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	r1 := submit()
	<-held // the flusher is in the fdatasync of r1's frame
	clock.advance(50 * time.Millisecond)
	r2 := submit() // opens a frame stamped +50
	clock.advance(110 * time.Millisecond)
	if _, err := e.Tick(); err != nil { // h1 is due: the +50 frame is closed aside
		t.Fatal(err)
	}
	r3 := submit()
	release(nil)
	for _, r := range []*engine.Request{r1, r2, r3} {
		if err := r.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	events := readAll(t, changes.NewFeed(e), 0, 100)
	var got []string
	for _, ev := range events {
		got = append(got, describe(ev)+" @"+time.Duration((ev.TimeMS-t0)*int64(time.Millisecond)).String())
	}
	want := []string{
		"stock [a/w1 +10=10] @0s",
		"hold hold=h1 [a/w1 -1=9] @0s",
		"release [a/w1 +1=10] @0s",
		"release [a/w1 +1=11] @50ms",
		"expire hold=h1 [a/w1 +1=12] @160ms",
		"release [a/w1 +1=13] @160ms",
	}
	if len(got) != len(want) {
		t.Fatalf("events %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("event %d: %q, want %q", i+1, got[i], want[i])
		}
	}
	rows := map[inventory.RowKey]int64{}
	if err := rebuild(1, events, rows); err != nil {
		t.Fatal(err)
	}
	state, _ := e.Rows()
	if err := equalRows(rows, state); err != nil {
		t.Fatal(err)
	}
}
