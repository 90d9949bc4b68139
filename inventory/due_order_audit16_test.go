package inventory

import (
	"slices"
	"testing"
)

// restore rebuilds a state from what a snapshot keeps (rows as stock ops,
// then every section), as journal recovery does.
func restoreAudit16(t *testing.T, s *State) *State {
	t.Helper()
	return restoreFromAudit16(t, s.Retention(), s.Rows(), s.Sections())
}

// restoreFrozenAudit16 is restoreAudit16 through a frozen view (what the
// engine's snapshots write), with the writer going on after the cut: ops
// applied by more, after Freeze and before the view is read.
func restoreFrozenAudit16(t *testing.T, s *State, more func()) *State {
	t.Helper()
	f := s.Freeze()
	more()
	rows, secs := f.AppendRows(nil), f.Sections()
	s.Thaw(f)
	slices.SortFunc(rows, func(a, b Row) int { return CompareRowKeys(a.Key, b.Key) })
	return restoreFromAudit16(t, s.Retention(), rows, secs)
}

func restoreFromAudit16(t *testing.T, retention int64, rows []Row, secs []Section) *State {
	t.Helper()
	c := NewState()
	c.SetRetention(retention)
	for _, r := range rows {
		op := Stock(r.Key, r.Count, r.Price)
		if res := c.Apply(&op, nil); res.Code != CodeOK {
			t.Fatalf("restore row %v: %+v", r.Key, res)
		}
	}
	for _, sec := range secs {
		if err := c.LoadSection(sec); err != nil {
			t.Fatalf("restore section %d: %v", sec.Tag, err)
		}
	}
	return c
}

// dueOrder expires every due hold, in NextDue order, and returns the ids.
func dueOrder(t *testing.T, s *State) []string {
	t.Helper()
	var ids []string
	for {
		id, ok := s.NextDue()
		if !ok {
			return ids
		}
		op := Expire(id)
		if r := s.Apply(&op, nil); !r.Changed {
			t.Fatalf("expire %s: %+v", id, r)
		}
		ids = append(ids, id)
	}
}

// TestDueOrderSurvivesSnapshot: holds with the same deadline come due in
// the same order from a state restored from a snapshot as from the live
// one (the expiries the writer journals, and the change stream's events,
// must not depend on whether the writer restarted).
func TestDueOrderSurvivesSnapshot(t *testing.T) {
	s := NewState()
	s.SetTime(1000)
	st := Stock(rk("a", "w1"), 100, 1)
	s.Apply(&st, nil)
	for _, id := range []string{"h5", "h3", "h9", "h1", "h7", "h2"} {
		op := Hold(id, 50, []Demand{{Group: gk("a"), N: 1}})
		if r := s.Apply(&op, nil); r.Code != CodeOK {
			t.Fatalf("hold %s: %+v", id, r)
		}
	}
	c := restoreAudit16(t, s)
	s.SetTime(1050)
	c.SetTime(1050)
	live, restored := dueOrder(t, s), dueOrder(t, c)
	if !slices.Equal(live, restored) {
		t.Fatalf("due order: live %v, restored %v", live, restored)
	}
}
