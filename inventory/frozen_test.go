package inventory

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"allot/catalog"
)

// frozenWorkload applies random ops of every kind to s: rows over more
// than one chunk, holds made, confirmed, cancelled and expired, keyed
// ops, catalog records set and deleted, time passing.
type frozenWorkload struct {
	rng  *rand.Rand
	skus []string
}

func newFrozenWorkload(seed uint64) *frozenWorkload {
	w := &frozenWorkload{rng: rand.New(rand.NewPCG(seed, 77))}
	for i := range 150 { // 450 rows: two chunks and a part
		w.skus = append(w.skus, fmt.Sprintf("sku%03d", i))
	}
	return w
}

func (w *frozenWorkload) step(s *State) {
	rng := w.rng
	group := func() GroupKey { return GroupKey{SKU: w.skus[rng.IntN(len(w.skus))], Condition: "new", Source: "s"} }
	wh := func() string { return fmt.Sprint("w", rng.IntN(3)) }
	holdID := func() string { return fmt.Sprint("h", rng.IntN(700)) }
	var op Op
	switch rng.IntN(11) {
	case 0, 1:
		op = Stock(group().Row(wh()), rng.Int64N(20), 100+rng.Int64N(5))
	case 2:
		op = Release(group().Row(wh()), 1+rng.Int64N(3))
	case 3:
		op = Capture(group(), 1+rng.Int64N(3))
	case 4, 5:
		op = Hold(holdID(), 1+rng.Int64N(300), []Demand{{Group: group(), N: 1 + rng.Int64N(2)}})
	case 6:
		op = Confirm(holdID())
	case 7:
		op = Cancel(holdID())
	case 8:
		sku := w.skus[rng.IntN(len(w.skus))]
		if rng.IntN(3) == 0 {
			op = CatalogDel(sku)
		} else {
			op = CatalogSet(catalog.Record{SKU: sku, Title: fmt.Sprint("Title ", rng.IntN(50)), Brand: fmt.Sprint("Brand", rng.IntN(4))})
		}
	default:
		expireDue(s, rng.Int64N(60), 1)
		return
	}
	if op.Kind.Keyed() && rng.IntN(3) == 0 {
		op.IdempotencyKey = fmt.Sprint("k", rng.IntN(2000))
	}
	s.Apply(&op, nil)
}

// expireDue moves s's time on by dt, expires every hold due, and collects
// collects times.
func expireDue(s *State, dt int64, collects int) {
	s.SetTime(s.Now() + dt)
	for {
		id, ok := s.NextDue()
		if !ok {
			break
		}
		e := Expire(id)
		s.Apply(&e, nil)
	}
	for range collects {
		s.Collect()
	}
}

// snapshotOf is what a snapshot of the cut holds, compared through a
// state loaded from it: rows sorted, and every section as that state
// encodes it again (so that the key table's layout does not matter).
func snapshotOf(t *testing.T, rows []Row, secs []Section) ([]Row, []Section) {
	t.Helper()
	st := NewState()
	for _, r := range rows {
		op := Stock(r.Key, r.Count, r.Price)
		if res := st.Apply(&op, nil); res.Code != CodeOK {
			t.Fatalf("row %v does not load: %+v", r.Key, res)
		}
	}
	for _, sec := range secs {
		if err := st.LoadSection(sec); err != nil {
			t.Fatalf("section %d does not load: %v", sec.Tag, err)
		}
	}
	if err := st.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
	return st.Rows(), st.Sections()
}

func sameSnapshot(aRows []Row, aSecs []Section, bRows []Row, bSecs []Section) string {
	if !slices.Equal(aRows, bRows) {
		return fmt.Sprintf("rows differ (%d and %d rows)", len(aRows), len(bRows))
	}
	if !slices.EqualFunc(aSecs, bSecs, func(x, y Section) bool { return x.Tag == y.Tag && slices.Equal(x.Bytes, y.Bytes) }) {
		for i := range min(len(aSecs), len(bSecs)) {
			if !slices.Equal(aSecs[i].Bytes, bSecs[i].Bytes) {
				return fmt.Sprintf("section %d differs", aSecs[i].Tag)
			}
		}
		return "sections differ"
	}
	return ""
}

// TestFrozenIsTheCut: a frozen view read on another goroutine while the
// writer applies thousands of ops gives exactly the state at the cut
// (run with -race: the reader and the writer share chunks).
func TestFrozenIsTheCut(t *testing.T) {
	for seed := uint64(1); seed <= 8; seed++ {
		s := NewState()
		s.SetTime(1_000_000)
		w := newFrozenWorkload(seed)
		for range 4000 {
			w.step(s)
		}
		if s.Len() <= chunkLen || s.holdsN <= chunkLen {
			t.Fatalf("seed %d: %d rows and %d logged holds: the test should span chunks", seed, s.Len(), s.holdsN)
		}
		wantRows, wantSecs := snapshotOf(t, s.Rows(), s.Sections())

		f := s.Freeze()
		// First the writer alone (every chunk it touches is copied aside
		// before the reader comes), then both at once.
		for range 1500 {
			w.step(s)
		}
		type read struct {
			rows []Row
			secs []Section
		}
		done := make(chan read)
		go func() {
			rows := f.AppendRows(nil)
			done <- read{rows, f.Sections()}
		}()
		for range 1500 {
			w.step(s) // the writer goes on while the reader reads
		}
		got := <-done
		s.Thaw(f)
		if err := s.CheckInvariants(); err != nil {
			t.Fatal(err)
		}
		gotRows, gotSecs := snapshotOf(t, got.rows, got.secs)
		if d := sameSnapshot(gotRows, gotSecs, wantRows, wantSecs); d != "" {
			t.Fatalf("seed %d: the frozen view is not the cut: %s", seed, d)
		}
		// The check has the power to see the writer's later ops: the
		// state after them differs from the cut.
		nowRows, nowSecs := snapshotOf(t, s.Rows(), s.Sections())
		if sameSnapshot(nowRows, nowSecs, wantRows, wantSecs) == "" {
			t.Fatalf("seed %d: 3000 ops changed nothing the check can see", seed)
		}
	}
}

// TestFrozenPreservedChunks: every chunk the writer changes before the
// reader reaches it is read from the writer's copy, and the writer waits
// for no chunk the reader is done with.
func TestFrozenPreservedChunks(t *testing.T) {
	s := NewState()
	for i := range 3 * chunkLen {
		op := Stock(rk(fmt.Sprint("s", i), "w1"), 5, 1)
		s.Apply(&op, nil)
	}
	want := s.Rows()
	f := s.Freeze()
	// Change one row in every chunk before the reader starts: all three
	// are copied aside.
	for c := range 3 {
		op := Release(rk(fmt.Sprint("s", c*chunkLen), "w1"), 1)
		s.Apply(&op, nil)
	}
	for c := range 3 {
		if st := f.rowGuard.states[c].Load(); st != chunkPreserved {
			t.Fatalf("chunk %d is in state %d after a write, want preserved", c, st)
		}
	}
	// A new row after the cut is not in the view.
	op := Stock(rk("late", "w1"), 9, 1)
	s.Apply(&op, nil)
	got := f.AppendRows(nil)
	s.Thaw(f)
	slices.SortFunc(got, func(a, b Row) int { return CompareRowKeys(a.Key, b.Key) })
	if !slices.Equal(got, want) {
		t.Fatalf("the frozen rows are not the cut's")
	}
	if s.frozen != nil {
		t.Fatal("Thaw left the state frozen")
	}
}

// TestHoldLogCompaction: once most logged holds are collected the log is
// rebuilt from the living ones, but never under a frozen view, whose
// reader still walks the old chunks.
func TestHoldLogCompaction(t *testing.T) {
	s := NewState()
	s.SetRetention(10)
	s.SetTime(1000)
	op := Stock(rk("a", "w1"), 1<<20, 1)
	s.Apply(&op, nil)
	hold := func(i int) {
		h := Hold(fmt.Sprint("h", i), 5, []Demand{{Group: gk("a"), N: 1}})
		if res := s.Apply(&h, nil); res.Code != CodeOK {
			t.Fatalf("hold %d: %+v", i, res)
		}
	}
	expireAll := func() { expireDue(s, 100, 10) }
	for i := range 3 * chunkLen {
		hold(i)
	}
	f := s.Freeze()
	expireAll()
	if s.holdsN != 3*chunkLen {
		t.Fatalf("the log was compacted under a frozen view: %d logged", s.holdsN)
	}
	s.Thaw(f)
	hold(-1) // expired by the next expireAll, but within its retention
	expireAll()
	hold(-2) // logged after the compaction
	if s.holdsN != 2 || len(s.holds) != 2 {
		t.Fatalf("after compaction %d holds logged, %d remembered; want 2 and 2", s.holdsN, len(s.holds))
	}
	if err := s.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}
