package engine

import (
	"errors"
	"testing"
	"time"

	"allot/inventory"
	"allot/vfs"
)

// SubmitBatch answers as Submit one after the other would: in order, each
// op seeing the ones before it, invalid ops refused without touching
// state, and in write mode the batch's ops written as one frame before any
// reply is released.
func TestSubmitBatchAsSubmitsInOrder(t *testing.T) {
	for _, d := range []Durability{DurabilityFsync, DurabilityWrite, DurabilityNone} {
		t.Run(string(d), func(t *testing.T) {
			e := mustOpen(t, Config{Dir: t.TempDir(), Durability: d})
			g := inventory.GroupKey{SKU: "a", Condition: "new", Source: "own"}
			ops := []inventory.Op{
				inventory.Stock(g.Row("w1"), 5, 100),
				inventory.Capture(g, 3),
				inventory.Capture(g, 0), // invalid
				inventory.Capture(g, 3), // insufficient: 2 left
				inventory.Release(g.Row("w1"), 1),
				inventory.Available(g),
			}
			rs := make([]*Request, len(ops))
			for i := range ops {
				rs[i] = NewRequest()
				rs[i].Op = ops[i]
			}
			before := e.journal.Bytes()
			n, err := e.SubmitBatch(rs)
			if n != len(rs) || err != nil {
				t.Fatalf("SubmitBatch = %d, %v", n, err)
			}
			want := []inventory.Code{inventory.CodeOK, inventory.CodeOK, inventory.CodeInvalid, inventory.CodeInsufficient, inventory.CodeOK, inventory.CodeOK}
			for i, r := range rs {
				if err := r.Wait(); err != nil || r.Result.Code != want[i] {
					t.Fatalf("op %d (%v): %v %+v, want %v", i, ops[i].Kind, err, r.Result, want[i])
				}
			}
			if c := rs[5].Result.Count; c != 3 {
				t.Fatalf("available after the batch = %d, want 3", c)
			}
			if d == DurabilityWrite {
				// The same ops submitted one by one: a frame each.
				c := mustOpen(t, Config{Dir: t.TempDir(), Durability: d})
				cBefore := c.journal.Bytes()
				for _, op := range ops {
					r := NewRequest()
					r.Op = op
					if err := c.Submit(r); err != nil || r.Wait() != nil {
						t.Fatal(err)
					}
				}
				batch, single := e.journal.Bytes()-before, c.journal.Bytes()-cBefore
				if batch <= 0 || batch >= single {
					t.Fatalf("write mode: the batch wrote %d journal bytes, one by one %d: want one frame, fewer bytes", batch, single)
				}
				c.Close()
			}
			// Reused requests: a second batch on the same ones.
			for i := range rs {
				rs[i].Op = inventory.Available(g)
			}
			if n, err := e.SubmitBatch(rs); n != len(rs) || err != nil {
				t.Fatal(n, err)
			}
			for _, r := range rs {
				if err := r.Wait(); err != nil || r.Result.Count != 3 {
					t.Fatalf("second batch: %v %+v", err, r.Result)
				}
			}
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
			if n, err := e.SubmitBatch(rs); n != 0 || !errors.Is(err, ErrClosed) {
				t.Fatalf("after Close: %d, %v; want 0, ErrClosed", n, err)
			}
		})
	}
}

// A batch whose frame fails to be written answers every op it applied
// with an unknown outcome (each may or may not be durable), and the next
// batch is refused: nothing is acknowledged after a journal error.
func TestSubmitBatchWriteFailure(t *testing.T) {
	fs := vfs.NewFaulty(vfs.NewMem())
	e := mustOpen(t, Config{Dir: "/d", FS: fs, Durability: DurabilityWrite})
	g := inventory.GroupKey{SKU: "a", Condition: "new", Source: "own"}
	must(e.Stock(g.Row("w1"), 5, 1))
	fs.FailWritesAfter(0)
	rs := []*Request{NewRequest(), NewRequest()}
	rs[0].Op, rs[1].Op = inventory.Capture(g, 1), inventory.Capture(g, 1)
	if n, err := e.SubmitBatch(rs); n != 2 || err != nil {
		t.Fatal(n, err)
	}
	for i, r := range rs {
		if err := r.Wait(); !errors.Is(err, ErrOutcomeUnknown) {
			t.Fatalf("op %d of the failed frame: %v, want an unknown outcome", i, err)
		}
	}
	rs[0].Op, rs[1].Op = inventory.Capture(g, 1), inventory.Available(g)
	if n, err := e.SubmitBatch(rs); n != 2 || err != nil {
		t.Fatal(n, err)
	}
	for i, r := range rs {
		if err := r.Wait(); !errors.Is(err, ErrUnavailable) || errors.Is(err, ErrOutcomeUnknown) {
			t.Fatalf("op %d after the failure: %v, want refused", i, err)
		}
	}
	e.Close()
}

// In none mode a frame left open from an earlier millisecond is written
// when the next batch begins: when that write fails, the batch applies
// nothing and acknowledges nothing.
func TestSubmitBatchFailedOpenFrame(t *testing.T) {
	fs := vfs.NewFaulty(vfs.NewMem())
	clock := &stepClock{now: time.UnixMilli(1_000_000)}
	e := mustOpen(t, Config{Dir: "/d", FS: fs, Durability: DurabilityNone, Clock: clock, TickInterval: -1})
	g := inventory.GroupKey{SKU: "a", Condition: "new", Source: "own"}
	must(e.Stock(g.Row("w1"), 5, 1)) // stays in the open frame (none mode)
	fs.FailWritesAfter(0)
	clock.now = clock.now.Add(time.Millisecond) // the next batch writes that frame first
	rs := []*Request{NewRequest(), NewRequest()}
	rs[0].Op, rs[1].Op = inventory.Capture(g, 1), inventory.Capture(g, 1)
	if n, err := e.SubmitBatch(rs); n != 2 || err != nil {
		t.Fatal(n, err)
	}
	for i, r := range rs {
		if err := r.Wait(); !errors.Is(err, ErrUnavailable) && !errors.Is(err, ErrOutcomeUnknown) {
			t.Fatalf("op %d after the open frame failed: %v %+v, want refused or unknown", i, err, r.Result)
		}
	}
	e.Close()
}

type stepClock struct{ now time.Time }

func (c *stepClock) Now() time.Time { return c.now }
