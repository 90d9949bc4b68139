package inventory

import (
	"slices"
	"testing"
)

func TestTouched(t *testing.T) {
	s := NewState()
	s.SetTime(1000)
	a1 := RowKey{"a", "w1", "new", "s"}
	a2 := RowKey{"a", "w2", "new", "s"}
	b1 := RowKey{"b", "w1", "new", "s"}
	for _, k := range []RowKey{a2, a1, b1} {
		op := Stock(k, 5, 100)
		if res := s.Apply(&op, nil); res.Code != CodeOK {
			t.Fatal(res.Code)
		}
	}
	ga, gb := a1.Group(), b1.Group()
	hold := Hold("h1", 60000, []Demand{{ga, 2}, {gb, 1}, {ga, 4}})
	if res := s.Apply(&hold, nil); res.Code != CodeOK {
		t.Fatal(res.Code)
	}
	cases := []struct {
		name string
		op   Op
		want []RowKey
	}{
		{"capture walks its group in warehouse order", Capture(ga, 1), []RowKey{a1, a2}},
		{"capture of an unknown group", Capture(GroupKey{"zz", "new", "s"}, 1), nil},
		{"release", Release(b1, 1), []RowKey{b1}},
		{"stock of a new row", Stock(RowKey{"c", "w", "n", "s"}, 1, 1), []RowKey{{"c", "w", "n", "s"}}},
		{"hold names a repeated group once", Hold("h2", 1, []Demand{{gb, 1}, {ga, 1}, {gb, 1}}), []RowKey{b1, a1, a2}},
		{"order", Order([]Demand{{ga, 1}}), []RowKey{a1, a2}},
		{"cancel: the hold's rows in allocation order", Cancel("h1"), []RowKey{a1, a2, b1}},
		{"confirm", Confirm("h1"), []RowKey{a1, a2, b1}},
		{"confirm of an unknown hold", Confirm("nope"), nil},
		{"a read", Get(a1), nil},
	}
	for _, c := range cases {
		got := s.Touched(&c.op, nil)
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: Touched = %v, want %v", c.name, got, c.want)
		}
	}
	// Every row an op changes is in its Touched list: apply each kind to a
	// clone and compare every row before and after.
	for _, c := range cases {
		st := s.Clone()
		touched := st.Touched(&c.op, nil)
		before := st.Rows()
		st.Apply(&c.op, nil)
		after := st.Rows()
		for _, r := range after {
			i := slices.IndexFunc(before, func(b Row) bool { return b.Key == r.Key })
			changed := i < 0 || before[i].Count != r.Count
			if changed && !slices.Contains(touched, r.Key) {
				t.Errorf("%s: row %v changed but is not in Touched %v", c.name, r.Key, touched)
			}
		}
	}
	// Once finished, a hold touches nothing more.
	cancel := Cancel("h1")
	s.Apply(&cancel, nil)
	if got := s.Touched(&cancel, nil); got != nil {
		t.Errorf("cancel of a cancelled hold: Touched = %v, want none", got)
	}
}
