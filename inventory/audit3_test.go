package inventory

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"allot/catalog"
)

// TestSnapshotOfReplacedHoldLoads: a hold id reused past its window leaves
// the old hold in the hold log. When the window is then longer than the
// one the id was reused under (recovery and a standby replay under
// ReplayRetentionMS and then take the configured window; an operator may
// raise --retention), the old hold is within the window again: a snapshot
// must still name each hold id once, the newer hold, or it does not load.
func TestSnapshotOfReplacedHoldLoads(t *testing.T) {
	s := NewState()
	s.SetTime(1000)
	s.SetRetention(ReplayRetentionMS) // replaying the journal
	g := gk("a")
	s.Apply(ptr(Stock(rk("a", "w1"), 10, 5)), nil)
	s.Apply(ptr(Hold("h", 50, []Demand{{g, 1}})), nil)
	s.Apply(ptr(Confirm("h")), nil)
	s.SetTime(1200)
	if res := s.Apply(ptr(Hold("h", 50, []Demand{{g, 2}})), nil); res.Code != CodeOK || !res.Changed {
		t.Fatalf("reuse of h past its window: %+v", res)
	}
	s.SetRetention(RetentionDefault) // the configured window rules again
	want := s.Apply(ptr(HoldGet("h")), nil)

	f := s.Freeze()
	rows, secs := f.AppendRows(nil), f.Sections()
	s.Thaw(f)
	for name, sec := range map[string][]Section{"frozen": secs, "state": s.Sections()} {
		st := NewState()
		for _, r := range rows {
			st.Apply(ptr(Stock(r.Key, r.Count, r.Price)), nil)
		}
		for _, sec := range sec {
			if err := st.LoadSection(sec); err != nil {
				t.Fatalf("%s snapshot: section %d does not load: %v", name, sec.Tag, err)
			}
		}
		if got := st.Apply(ptr(HoldGet("h")), nil); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s snapshot: hold h is %+v, want %+v", name, got, want)
		}
	}
}

// TestReplayOfJournaledOpsIsTheState: the ops that changed state, applied
// again at their stamps under ReplayRetentionMS (recovery, a standby, a
// change stream follower), give the same rows and sections as the live
// run under its window, and each replays (Changed).
func TestReplayOfJournaledOpsIsTheState(t *testing.T) {
	type journaled struct {
		stamp int64
		op    Op
	}
	for seed := uint64(1); seed <= 6; seed++ {
		rng := rand.New(rand.NewPCG(seed, 3))
		const retention = 300
		s := NewState()
		s.SetRetention(retention)
		s.SetTime(1000)
		var log []journaled
		apply := func(op Op) {
			enc := AppendOp(nil, &op)
			if res := s.Apply(&op, nil); res.Changed {
				d := NewDecoder()
				d.Reset(enc)
				var back Op
				if err := d.Op(&back); err != nil || !d.Done() {
					t.Fatalf("seed %d: %v does not decode: %v", seed, op.Kind, err)
				}
				back.Lines = slices.Clone(back.Lines)
				log = append(log, journaled{s.Now(), back})
			}
		}
		group := func() GroupKey { return GroupKey{SKU: fmt.Sprint("s", rng.IntN(3)), Condition: "c", Source: "o"} }
		for range 1500 {
			var op Op
			switch rng.IntN(12) {
			case 0:
				op = Stock(group().Row(fmt.Sprint("w", rng.IntN(3))), rng.Int64N(10), 1)
			case 1:
				op = Release(group().Row(fmt.Sprint("w", rng.IntN(3))), 1+rng.Int64N(3))
			case 2:
				op = Capture(group(), 1+rng.Int64N(4))
			case 3, 4:
				op = Hold(fmt.Sprint("h", rng.IntN(8)), 1+rng.Int64N(200), []Demand{{group(), 1 + rng.Int64N(3)}, {group(), 1}})
			case 5:
				op = Confirm(fmt.Sprint("h", rng.IntN(8)))
			case 6:
				op = Cancel(fmt.Sprint("h", rng.IntN(8)))
			case 7:
				op = Order([]Demand{{group(), 1 + rng.Int64N(3)}, {group(), 1}})
			case 8:
				if rng.IntN(2) == 0 {
					op = CatalogSet(catalog.Record{SKU: fmt.Sprint("s", rng.IntN(3)), Title: "t", Brand: fmt.Sprint("b", rng.IntN(2))})
				} else {
					op = CatalogDel(fmt.Sprint("s", rng.IntN(3)))
				}
			default:
				s.SetTime(s.Now() + rng.Int64N(80))
				for {
					id, ok := s.NextDue()
					if !ok {
						break
					}
					apply(Expire(id))
				}
				s.Collect()
				continue
			}
			if op.Kind.Keyed() && rng.IntN(2) == 0 {
				op.IdempotencyKey = fmt.Sprint("k", rng.IntN(10))
			}
			if (op.Kind == KindConfirm || op.Kind == KindCancel) && s.HoldDue(op.Hold) {
				apply(Expire(op.Hold)) // what the engine's writer does first
			}
			apply(op)
		}
		r := NewState()
		r.SetRetention(ReplayRetentionMS)
		for i, j := range log {
			r.SetTime(j.stamp)
			if res := r.Apply(&j.op, nil); !res.Changed {
				t.Fatalf("seed %d: journaled op %d (%v) does not replay: %+v", seed, i, j.op.Kind, res)
			}
		}
		r.SetRetention(retention)
		r.SetTime(s.Now())
		if !slices.Equal(r.Rows(), s.Rows()) {
			t.Fatalf("seed %d: replayed rows differ", seed)
		}
		if !reflect.DeepEqual(r.Sections(), s.Sections()) {
			t.Fatalf("seed %d: replayed sections differ", seed)
		}
	}
}

// TestHoldLifecycleEdges: every CONFIRM, CANCEL, HOLD.GET and HOLD repeat
// outcome of DESIGN's hold rules, at the deadline and retention edges.
func TestHoldLifecycleEdges(t *testing.T) {
	const retention = 100
	g := gk("a")
	setup := func() *State {
		s := NewState()
		s.SetRetention(retention)
		s.SetTime(1000)
		s.Apply(ptr(Stock(rk("a", "w1"), 4, 1)), nil)
		s.Apply(ptr(Stock(rk("a", "w2"), 4, 1)), nil)
		if res := s.Apply(ptr(Hold("h", 10, []Demand{{g, 3}, {g, 3}})), nil); res.Code != CodeOK || res.ExpiresAt != 1010 {
			t.Fatalf("hold: %+v", res)
		}
		return s
	}
	type step struct {
		at   int64 // 0: no time change
		op   Op
		code Code
		// changed, repeat: Result.Changed and Result.Repeat.
		changed, repeat bool
		avail           int64 // the group's total after the step
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"confirm a millisecond before the deadline, again, then cancel", []step{
			{1009, Confirm("h"), CodeOK, true, false, 2},
			{0, Confirm("h"), CodeOK, false, true, 2},
			{0, Cancel("h"), CodeConfirmed, false, false, 2},
			{1108, HoldGet("h"), CodeOK, false, false, 2},
			{1108, Confirm("h"), CodeOK, false, true, 2},
			{1109, Confirm("h"), CodeNotFound, false, false, 2}, // finished at 1009, retention 100
			{0, HoldGet("h"), CodeNotFound, false, false, 2},
		}},
		{"confirm at the deadline expires", []step{
			{1010, Confirm("h"), CodeExpired, true, false, 8},
			{0, Confirm("h"), CodeExpired, false, false, 8},
			{0, Cancel("h"), CodeOK, false, true, 8},
		}},
		{"cancel at the deadline expires and is OK", []step{
			{1010, Cancel("h"), CodeOK, true, false, 8},
			{0, Confirm("h"), CodeExpired, false, false, 8},
		}},
		{"cancel, then confirm", []step{
			{1005, Cancel("h"), CodeOK, true, false, 8},
			{0, Cancel("h"), CodeOK, false, true, 8},
			{0, Confirm("h"), CodeCancelled, false, false, 8},
			{0, Expire("h"), CodeInvalid, false, false, 8},
		}},
		{"expire only at the deadline", []step{
			{1009, Expire("h"), CodeInvalid, false, false, 2},
			{1010, Expire("h"), CodeOK, true, false, 8},
			{0, Expire("h"), CodeInvalid, false, false, 8},
		}},
		{"a repeat answers in every state; other lines or order mismatch", []step{
			{1005, Hold("h", 999, []Demand{{g, 3}, {g, 3}}), CodeOK, false, true, 2},
			{0, Hold("h", 10, []Demand{{g, 6}}), CodeMismatch, false, false, 2},
			{0, Cancel("h"), CodeOK, true, false, 8},
			{0, Hold("h", 10, []Demand{{g, 3}, {g, 3}}), CodeOK, false, true, 8},
			{1104, Hold("h", 10, []Demand{{g, 1}}), CodeMismatch, false, false, 8},
			{1105, Hold("h", 10, []Demand{{g, 1}}), CodeOK, true, false, 7}, // past the window: a new hold
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := setup()
			for i, st := range tt.steps {
				if st.at != 0 {
					s.SetTime(st.at)
				}
				res := s.Apply(&st.op, nil)
				if res.Code != st.code || res.Changed != st.changed || res.Repeat != st.repeat {
					t.Fatalf("step %d %v: %+v, want code %v changed %v repeat %v", i, st.op.Kind, res, st.code, st.changed, st.repeat)
				}
				if st.op.Kind == KindHold && res.Code == CodeOK && res.Repeat && (res.ExpiresAt != 1010 || len(res.Allocations) != 2) {
					t.Fatalf("step %d: a repeat does not give the original reply: %+v", i, res)
				}
				if got := s.Available(g); got != st.avail {
					t.Fatalf("step %d %v: available %d, want %d", i, st.op.Kind, got, st.avail)
				}
				if err := s.CheckInvariants(); err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
			}
		})
	}
	s := setup()
	for _, op := range []Op{Hold("x", 0, []Demand{{g, 1}}), Hold("x", HoldTTLMax+1, []Demand{{g, 1}}), Hold("x", 1, nil),
		Hold("x", 1, make([]Demand, HoldLinesMax+1)), Hold("x", 1, []Demand{{g, 0}}), Order([]Demand{{g, -1}})} {
		if res := s.Apply(&op, nil); res.Code != CodeInvalid || res.Changed {
			t.Fatalf("%v ttl %d, %d lines: %+v, want invalid", op.Kind, op.TTL, len(op.Lines), res)
		}
	}
	if res := s.Apply(ptr(Hold("x", HoldTTLMax, []Demand{{g, 1}})), nil); res.Code != CodeOK || res.ExpiresAt != 1000+HoldTTLMax {
		t.Fatalf("hold of the longest ttl: %+v", res)
	}
}

// TestIdempotencyKeyEdges: a repeat gives the first reply and changes
// nothing, a key is one namespace over kinds, and is forgotten exactly at
// stamp + retention; a snapshot keeps it.
func TestIdempotencyKeyEdges(t *testing.T) {
	s := NewState()
	s.SetRetention(100)
	s.SetTime(1000)
	s.Apply(ptr(Stock(rk("a", "w1"), 5, 1)), nil)
	keyed := func(op Op, key string) *Op { op.IdempotencyKey = key; return &op }
	first := s.Apply(keyed(Capture(gk("a"), 2), "k"), nil)
	if first.Code != CodeOK || !first.Changed {
		t.Fatalf("first: %+v", first)
	}
	s.SetTime(1099)
	again := s.Apply(keyed(Capture(gk("a"), 2), "k"), nil)
	if again.Changed || !again.Repeat || !slices.Equal(again.Lines, []Line{{"w1", 2}}) || s.Available(gk("a")) != 3 {
		t.Fatalf("repeat: %+v, available %d", again, s.Available(gk("a")))
	}
	for _, op := range []*Op{keyed(Capture(gk("a"), 1), "k"), keyed(Release(rk("a", "w1"), 2), "k")} {
		if res := s.Apply(op, nil); res.Code != CodeMismatch || res.Changed {
			t.Fatalf("%v with the key: %+v", op.Kind, res)
		}
	}
	// A business outcome binds the key too.
	if res := s.Apply(keyed(Release(rk("a", "nope"), 1), "n"), nil); res.Code != CodeNotFound || !res.Changed {
		t.Fatalf("release of an unknown row: %+v", res)
	}
	s.Apply(ptr(Stock(rk("a", "nope"), 1, 1)), nil)
	if res := s.Apply(keyed(Release(rk("a", "nope"), 1), "n"), nil); res.Code != CodeNotFound || !res.Repeat {
		t.Fatalf("repeat of a not-found: %+v", res)
	}
	// A snapshot keeps the keys.
	c := NewState()
	c.SetRetention(100)
	for _, r := range s.Rows() {
		c.Apply(ptr(Stock(r.Key, r.Count, r.Price)), nil)
	}
	for _, sec := range s.Sections() {
		if err := c.LoadSection(sec); err != nil {
			t.Fatal(err)
		}
	}
	for _, st := range []*State{s, c} {
		if res := st.Apply(keyed(Capture(gk("a"), 2), "k"), nil); !res.Repeat || res.Changed {
			t.Fatalf("repeat within the window: %+v", res)
		}
		st.SetTime(1100)
		if res := st.Apply(keyed(Capture(gk("a"), 1), "k"), nil); res.Code != CodeOK || !res.Changed || res.Repeat {
			t.Fatalf("the key at stamp + retention: %+v, want applied anew", res)
		}
	}
}

// TestOrderAndCountEdges: an order naming a group twice is summed (one
// allocation per row, short as a whole), lines over groups are all or
// nothing, and units returned past CountMax are capped, not wrapped.
func TestOrderAndCountEdges(t *testing.T) {
	s := NewState()
	s.Apply(ptr(Stock(rk("a", "w2"), 3, 1)), nil)
	s.Apply(ptr(Stock(rk("a", "w1"), 2, 1)), nil)
	s.Apply(ptr(Stock(rk("b", "w1"), 1, 1)), nil)
	res := s.Apply(ptr(Order([]Demand{{gk("a"), 3}, {gk("b"), 2}, {gk("a"), 3}})), nil)
	if res.Code != CodeInsufficient || res.ShortLine != 0 || res.Available != 5 || s.Available(gk("a")) != 5 || s.Available(gk("b")) != 1 {
		t.Fatalf("short order: %+v", res)
	}
	res = s.Apply(ptr(Order([]Demand{{gk("a"), 1}, {gk("b"), 1}, {gk("a"), 3}})), nil)
	want := []Allocation{{rk("a", "w1"), 2}, {rk("a", "w2"), 2}, {rk("b", "w1"), 1}}
	if res.Code != CodeOK || !slices.Equal(res.Allocations, want) {
		t.Fatalf("order: %+v, want %v", res, want)
	}
	res = s.Apply(ptr(Order([]Demand{{gk("a"), 1}, {gk("none"), 1}})), nil)
	if res.Code != CodeInsufficient || res.ShortLine != 1 || res.Available != 0 || s.Available(gk("a")) != 1 {
		t.Fatalf("order of an unknown group: %+v", res)
	}
	s.Apply(ptr(Hold("h", 10, []Demand{{gk("a"), 1}})), nil)
	s.Apply(ptr(Stock(rk("a", "w2"), CountMax, 1)), nil)
	if res := s.Apply(ptr(Cancel("h")), nil); res.Code != CodeOK {
		t.Fatalf("cancel: %+v", res)
	}
	if r, _ := s.Row(rk("a", "w2")); r.Count != CountMax || s.Stats().Capped != 1 {
		t.Fatalf("cancel past CountMax: count %d, capped %d", r.Count, s.Stats().Capped)
	}
	if res := s.Apply(ptr(Release(rk("a", "w2"), 1)), nil); res.Code != CodeOverflow || res.Changed {
		t.Fatalf("release past CountMax: %+v", res)
	}
	if err := s.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}
