package inventory

import (
	"fmt"
	"testing"

	"allot/catalog"
)

// BenchmarkSnapshotCut is the snapshot's work under the engine's lock, by
// state size: "copy" is what the engine did before (every row copied and
// every section encoded under the lock), "freeze" what it does now
// (Freeze, then Thaw once the reader is done; the reading runs off the
// lock). Each state has as many holds, keys and catalog records as a
// tenth of its rows.
//
//	go test ./inventory -run XXX -bench SnapshotCut -benchtime 20x
func BenchmarkSnapshotCut(b *testing.B) {
	for _, rows := range []int{10_000, 100_000, 1_000_000} {
		s := benchState(rows)
		b.Run(fmt.Sprintf("rows=%d/copy", rows), func(b *testing.B) {
			for range b.N {
				dst := s.AppendRows(make([]Row, 0, s.Len()))
				secs := s.Sections()
				if len(dst) != rows || len(secs) == 0 {
					b.Fatal("short copy")
				}
			}
		})
		b.Run(fmt.Sprintf("rows=%d/freeze", rows), func(b *testing.B) {
			for range b.N {
				f := s.Freeze()
				s.Thaw(f)
			}
		})
	}
}

func benchState(rows int) *State {
	s := NewState()
	s.SetTime(1_000_000)
	for i := range rows {
		op := Stock(rk(fmt.Sprintf("sku%07d", i/3), fmt.Sprint("w", i%3)), 50, 100)
		s.Apply(&op, nil)
	}
	for i := range rows / 10 {
		h := Hold(fmt.Sprint("h", i), 600_000, []Demand{{Group: gk(fmt.Sprintf("sku%07d", i)), N: 1}})
		s.Apply(&h, nil)
		c := Capture(gk(fmt.Sprintf("sku%07d", i)), 1)
		c.IdempotencyKey = fmt.Sprint("k", i)
		s.Apply(&c, nil)
		r := CatalogSet(catalog.Record{SKU: fmt.Sprintf("sku%07d", i), Title: fmt.Sprint("Title ", i), Brand: "Acme"})
		s.Apply(&r, nil)
	}
	return s
}
