package inventory

import "testing"

// TestCheckInvariantsCatchesWhatItClaims corrupts, one at a time, each
// invariant CheckInvariants (and checkHolds) says it verifies, and expects
// an error for each.
func TestCheckInvariantsCatchesWhatItClaims(t *testing.T) {
	build := func() *State {
		s := NewState()
		s.SetTime(1000)
		for _, w := range []string{"w1", "w2", "w3"} {
			s.Apply(ptr(Stock(rk("a", w), 5, 1)), nil)
		}
		s.Apply(ptr(Stock(rk("b", "w1"), 5, 1)), nil)
		if r := s.Apply(ptr(Hold("h1", 100, []Demand{{gk("a"), 7}})), nil); r.Code != CodeOK {
			t.Fatalf("hold: %+v", r)
		}
		s.Apply(ptr(Hold("h2", 100, []Demand{{gk("b"), 1}})), nil)
		s.Apply(ptr(Confirm("h2")), nil)
		if err := s.CheckInvariants(); err != nil {
			t.Fatalf("clean state: %v", err)
		}
		return s
	}
	ga := GroupKey{SKU: "a", Condition: "new", Source: "s1"}
	for name, corrupt := range map[string]func(s *State){
		"count below zero":    func(s *State) { s.rows[rk("a", "w3")].count = -1 },
		"count over CountMax": func(s *State) { s.rows[rk("a", "w3")].count = CountMax + 1 },
		"total off":           func(s *State) { s.groups[ga].totalLo++ },
		"rows out of order": func(s *State) {
			g := s.groups[ga]
			g.rows[0], g.rows[1] = g.rows[1], g.rows[0]
		},
		"row twice in group": func(s *State) {
			g := s.groups[ga]
			g.rows[1] = g.rows[0]
		},
		"row missing from map": func(s *State) { delete(s.rows, rk("a", "w2")) },
		"row in another group": func(s *State) { s.rows[rk("a", "w2")].group = s.groups[gk("b")] },
		"row slot wrong":       func(s *State) { s.rows[rk("a", "w2")].slot = 0 },
		"hold row not state's": func(s *State) { s.holds["h1"].alloc[0].row = &row{key: rk("a", "w1")} },
		"hold count zero":      func(s *State) { s.holds["h1"].alloc[0].count = 0 },
		"active counter":       func(s *State) { s.stats.HoldsActive++ },
		"hold filed elsewhere": func(s *State) { s.holds["h9"] = s.holds["h1"] },
		"hold not in log":      func(s *State) { s.holdChunks[0][s.holds["h1"].logPos] = nil },
	} {
		s := build()
		corrupt(s)
		if err := s.CheckInvariants(); err == nil {
			t.Errorf("%s: CheckInvariants found nothing", name)
		}
	}
}

// TestCheckInvariantsCatchesALostDeadline: a held hold whose deadline is
// not in the expiry heap never expires (its units stay out of the rows
// for good); a heap out of order expires holds late. CheckInvariants, run
// on recovery and by the tests, must see both.
func TestCheckInvariantsCatchesALostDeadline(t *testing.T) {
	build := func() *State {
		s := NewState()
		s.SetTime(1000)
		s.Apply(ptr(Stock(rk("a", "w1"), 50, 1)), nil)
		for i, id := range []string{"h1", "h2", "h3", "h4"} {
			if r := s.Apply(ptr(Hold(id, int64(100-10*i), []Demand{{gk("a"), 1}})), nil); r.Code != CodeOK {
				t.Fatalf("hold %s: %+v", id, r)
			}
		}
		if err := s.CheckInvariants(); err != nil {
			t.Fatalf("clean state: %v", err)
		}
		return s
	}
	for name, corrupt := range map[string]func(s *State){
		"deadline lost": func(s *State) {
			s.deadlines = s.deadlines[:len(s.deadlines)-1]
		},
		"deadline of another time": func(s *State) {
			for i := range s.deadlines {
				if s.deadlines[i].h.id == "h2" {
					s.deadlines[i].at += 5000
				}
			}
		},
		"heap out of order": func(s *State) {
			n := len(s.deadlines) - 1
			s.deadlines[0], s.deadlines[n] = s.deadlines[n], s.deadlines[0]
		},
	} {
		s := build()
		corrupt(s)
		if err := s.CheckInvariants(); err == nil {
			t.Errorf("%s: CheckInvariants found nothing", name)
		}
	}
}
