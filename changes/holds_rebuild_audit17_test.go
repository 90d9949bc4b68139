package changes_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"allot/changes"
	"allot/engine"
	"allot/inventory"
)

// TestStreamRebuildsHolds: TestStreamRebuildsState compares the rebuilt
// rows' counts only. The stream says enough to rebuild the holds too:
// every hold's state and its allocation (a hold event's rows, with the
// units taken), which a cancel or an expiry gives back row by row and a
// confirm leaves gone. Compared with the engine's HOLD.GET for every hold
// the stream names. (Prices are not in the contract's events, so no
// consumer can rebuild them: see the report.)
func TestStreamRebuildsHolds(t *testing.T) {
	e, err := engine.Open(engine.Config{Dir: t.TempDir(), Durability: engine.DurabilityWrite, SegmentBytes: 8192})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	workload(t, e, rand.New(rand.NewPCG(17, 17)), 600)
	waitNoHolds(t, e)
	events := readAll(t, changes.NewFeed(e), 0, 97)
	type hold struct {
		state string
		alloc []inventory.Allocation
	}
	holds := map[string]*hold{}
	for _, ev := range events {
		switch ev.Op {
		case "hold":
			if holds[ev.Hold] != nil {
				t.Fatalf("seq %d: hold %s again", ev.Seq, ev.Hold)
			}
			h := &hold{state: "held"}
			for _, r := range ev.Rows {
				if r.Delta >= 0 {
					t.Fatalf("seq %d: a hold gives units to %v", ev.Seq, r)
				}
				h.alloc = append(h.alloc, inventory.Allocation{Row: r.Key(), Count: -r.Delta})
			}
			holds[ev.Hold] = h
		case "confirm", "cancel", "expire":
			h := holds[ev.Hold]
			if h == nil || h.state != "held" {
				t.Fatalf("seq %d: %s of hold %s, which is %+v", ev.Seq, ev.Op, ev.Hold, h)
			}
			var back []inventory.Allocation
			for _, r := range ev.Rows {
				back = append(back, inventory.Allocation{Row: r.Key(), Count: r.Delta})
			}
			if ev.Op == "confirm" {
				if len(back) != 0 {
					t.Fatalf("seq %d: a confirm changes rows %v", ev.Seq, back)
				}
				h.state = "confirmed"
			} else {
				if fmt.Sprint(back) != fmt.Sprint(h.alloc) {
					t.Fatalf("seq %d: %s of %s gives back %v; it took %v", ev.Seq, ev.Op, ev.Hold, back, h.alloc)
				}
				h.state = map[string]string{"cancel": "cancelled", "expire": "expired"}[ev.Op]
			}
		}
	}
	states := map[string]int{}
	for id, h := range holds {
		res, err := e.HoldGet(id)
		if err != nil || res.Code != inventory.CodeOK {
			t.Fatalf("HOLD.GET %s: %v %v", id, res.Code, err)
		}
		if res.State.String() != h.state || fmt.Sprint(res.Allocations) != fmt.Sprint(h.alloc) {
			t.Errorf("hold %s: the engine has %s %v, the stream rebuilt %s %v", id, res.State, res.Allocations, h.state, h.alloc)
		}
		states[h.state]++
	}
	for _, s := range []string{"confirmed", "cancelled", "expired"} {
		if states[s] == 0 {
			t.Errorf("no %s hold in %v: the test proves less than it says", s, states)
		}
	}
	t.Logf("%d holds: %v", len(holds), states)
}
