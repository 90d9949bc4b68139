package engine

import (
	"testing"
	"time"

	"allot/inventory"
	"allot/vfs"
)

// TestSlowSyncDoesNotHoldBackExpiry: in fsync mode a frame stays open at
// its first op's stamp while the flusher's fdatasync runs; a tick or a
// confirm that came then joined it at that stamp. Behind a slow fdatasync
// a hold was not expired 100 ms after its deadline (DESIGN.md: a tick
// within 100 ms), and a confirm well past the deadline was answered OK.
// A frame open for cutAfter with a hold due is now closed aside for one
// stamped now.
func TestSlowSyncDoesNotHoldBackExpiry(t *testing.T) {
	for _, confirm := range []bool{false, true} {
		name := map[bool]string{false: "tick", true: "confirm"}[confirm]
		t.Run(name, func(t *testing.T) {
			clock := newFakeClock()
			fs := vfs.NewFaulty(vfs.NewMem())
			e := mustOpen(t, Config{Dir: "/d", FS: fs, Clock: clock, TickInterval: -1})
			must(e.Stock(rk("a", "w1"), 10, 1))
			must(e.Hold("h1", 100*time.Millisecond, []inventory.Demand{line("a", 1)}))
			held, release := fs.HoldSyncs("")
			defer release(nil)
			r1 := NewRequest()
			r1.Op = inventory.Release(rk("a", "w1"), 1)
			if err := e.Submit(r1); err != nil {
				t.Fatal(err)
			}
			<-held // the flusher is in the fdatasync of r1's frame
			clock.Advance(50 * time.Millisecond)
			r2 := NewRequest() // opens a frame stamped +50
			r2.Op = inventory.Release(rk("a", "w1"), 1)
			if err := e.Submit(r2); err != nil {
				t.Fatal(err)
			}
			clock.Advance(110 * time.Millisecond) // 60 ms past the deadline
			var r3 *Request
			if confirm {
				r3 = NewRequest()
				r3.Op = inventory.Confirm("h1")
				if err := e.Submit(r3); err != nil {
					t.Fatal(err)
				}
			} else if _, err := e.Tick(); err != nil {
				t.Fatal(err)
			}
			expired := e.Stats().State.Expired
			release(nil)
			for _, r := range []*Request{r1, r2, r3} {
				if r != nil {
					if err := r.Wait(); err != nil {
						t.Fatal(err)
					}
				}
			}
			if expired != 1 {
				t.Fatalf("60 ms past its deadline, behind a slow fdatasync, %d holds expired, want 1", expired)
			}
			if confirm && r3.Result.Code != inventory.CodeExpired {
				t.Fatalf("a confirm 60 ms past the deadline: %v, want EXPIRED", r3.Result.Code)
			}
			// Everything is in the journal, in order: a restart finds the
			// same state.
			rows, err := e.Rows()
			if err != nil {
				t.Fatal(err)
			}
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
			e2 := mustOpen(t, Config{Dir: "/d", FS: fs, Clock: clock, TickInterval: -1})
			defer e2.Close()
			if g := must(e2.HoldGet("h1")); g.State != inventory.HoldExpired {
				t.Fatalf("after a restart h1 is %v", g.State)
			}
			if again, err := e2.Rows(); err != nil || len(again) != len(rows) || again[0] != rows[0] {
				t.Fatalf("after a restart rows %v, before %v", again, rows)
			}
		})
	}
}

// stalledLog is a replicated log whose appends wait while held is open.
type stalledLog struct {
	logReplicator
	gate    chan struct{}
	entered chan struct{}
}

func (l *stalledLog) Replicate(frame []byte) error {
	select {
	case l.entered <- struct{}{}:
	default:
	}
	<-l.gate
	return l.logReplicator.Replicate(frame)
}

// On a replicated primary the open frame waits for the log's append as it
// waits for an fdatasync: a stalled append (a NATS leader election) held
// back expiry the same way. The frame closed aside goes to the log as a
// frame of its own, before the next, and a standby applying them ends
// with the same holds.
func TestSlowAppendDoesNotHoldBackExpiry(t *testing.T) {
	for _, mode := range []Durability{DurabilityFsync, DurabilityWrite} {
		t.Run(string(mode), func(t *testing.T) {
			clock := newFakeClock()
			p := mustOpen(t, Config{Dir: t.TempDir(), Durability: mode, Replicated: true, Clock: clock, TickInterval: -1})
			log := &stalledLog{gate: make(chan struct{}), entered: make(chan struct{}, 1)}
			close(log.gate)
			if err := p.Promote(log); err != nil {
				t.Fatal(err)
			}
			must(p.Stock(rk("a", "w1"), 10, 1))
			must(p.Hold("h1", 100*time.Millisecond, []inventory.Demand{line("a", 1)}))
			log.gate = make(chan struct{}) // appends stall from here on
			for len(log.entered) > 0 {
				<-log.entered
			}
			r1 := NewRequest()
			r1.Op = inventory.Release(rk("a", "w1"), 1)
			if err := p.Submit(r1); err != nil {
				t.Fatal(err)
			}
			<-log.entered // the flusher is appending r1's frame
			clock.Advance(50 * time.Millisecond)
			r2 := NewRequest()
			r2.Op = inventory.Release(rk("a", "w1"), 1)
			if err := p.Submit(r2); err != nil {
				t.Fatal(err)
			}
			clock.Advance(110 * time.Millisecond)
			r3 := NewRequest()
			r3.Op = inventory.Confirm("h1")
			if err := p.Submit(r3); err != nil {
				t.Fatal(err)
			}
			close(log.gate)
			for _, r := range []*Request{r1, r2, r3} {
				if err := r.Wait(); err != nil {
					t.Fatal(err)
				}
			}
			if r3.Result.Code != inventory.CodeExpired {
				t.Fatalf("a confirm 60 ms past the deadline behind a stalled append: %v, want EXPIRED", r3.Result.Code)
			}
			if err := p.Close(); err != nil {
				t.Fatal(err)
			}
			s := mustOpen(t, Config{Dir: t.TempDir(), Durability: mode, Replicated: true, Clock: clock, TickInterval: -1})
			defer s.Close()
			for _, f := range log.take() {
				if err := s.ApplyFrame(f); err != nil {
					t.Fatal(err)
				}
			}
			if g := must(s.HoldGet("h1")); g.State != inventory.HoldExpired {
				t.Fatalf("the standby has h1 %v", g.State)
			}
		})
	}
}
