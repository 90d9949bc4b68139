package inventory

import (
	"cmp"
	"fmt"
	"math"
	"math/bits"
	"slices"
)

// State is the whole inventory: rows, and an index of groups whose rows are
// kept in warehouse order.
//
// Rows live behind pointers so that a group can hold them in an ordered
// slice and a capture walks that slice without a second map lookup per
// warehouse. The alternative, one ordered tree keyed by (group, warehouse),
// costs a tree descent per capture and allocates on insert; a group holds a
// handful of warehouses, so an insertion-sorted slice is both simpler and
// faster.
//
// A group's total is a 128-bit sum: each count may be up to CountMax and a
// group may have any number of warehouses, so an int64 could overflow.
//
// State is not safe for concurrent use: one goroutine (the engine's writer)
// owns it.
type State struct {
	rows   map[RowKey]*row
	groups map[GroupKey]*group
	skus   map[string][]*group // in creation order; sorted on read
}

type row struct {
	key   RowKey
	count int64
	price int64
	group *group
}

type group struct {
	key     GroupKey
	rows    []*row // ascending warehouse order
	totalHi uint64
	totalLo uint64
}

// NewState returns an empty state.
func NewState() *State {
	return &State{
		rows:   make(map[RowKey]*row),
		groups: make(map[GroupKey]*group),
		skus:   make(map[string][]*group),
	}
}

func (g *group) add(n int64) {
	var carry uint64
	g.totalLo, carry = bits.Add64(g.totalLo, uint64(n), 0)
	g.totalHi += carry
}

func (g *group) sub(n int64) {
	var borrow uint64
	g.totalLo, borrow = bits.Sub64(g.totalLo, uint64(n), 0)
	g.totalHi -= borrow
}

// atLeast reports whether the total is at least n (n >= 0).
func (g *group) atLeast(n int64) bool {
	return g.totalHi > 0 || g.totalLo >= uint64(n)
}

// available is the total, saturated at math.MaxInt64.
func (g *group) available() int64 {
	if g.totalHi > 0 || g.totalLo > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(g.totalLo)
}

// Apply applies op and returns its outcome. lines is a buffer for a
// capture's allocation (it may be nil; it is grown if too small); Apply does
// not keep it. An op that does not return CodeOK changes nothing.
func (s *State) Apply(op *Op, lines []Line) Result {
	if d := op.Check(); d != "" {
		return Result{Code: CodeInvalid, Detail: d}
	}
	switch op.Kind {
	case KindCapture:
		return s.capture(op.Key.Group(), op.N, lines)
	case KindRelease:
		return s.release(op.Key, op.N)
	case KindStock:
		return s.stock(op.Key, op.N, op.Price)
	case KindGet:
		r := s.rows[op.Key]
		if r == nil {
			return Result{Code: CodeNotFound}
		}
		return Result{Code: CodeOK, Count: r.count, Price: r.price}
	case KindAvailable:
		g := s.groups[op.Key.Group()]
		if g == nil {
			return Result{Code: CodeOK}
		}
		return Result{Code: CodeOK, Count: g.available()}
	}
	panic("inventory: op passed Check with an unknown kind")
}

func (s *State) capture(k GroupKey, n int64, lines []Line) Result {
	g := s.groups[k]
	if g == nil {
		return Result{Code: CodeInsufficient}
	}
	if !g.atLeast(n) {
		return Result{Code: CodeInsufficient, Available: g.available()}
	}
	lines = lines[:0]
	remaining := n
	for _, r := range g.rows {
		if r.count == 0 {
			continue
		}
		take := min(r.count, remaining)
		r.count -= take
		remaining -= take
		lines = append(lines, Line{Warehouse: r.key.Warehouse, Count: take})
		if remaining == 0 {
			break
		}
	}
	if remaining != 0 {
		panic(fmt.Sprintf("inventory: group %v total covered %d but rows fell short by %d", k, n, remaining))
	}
	g.sub(n)
	return Result{Code: CodeOK, Lines: lines}
}

func (s *State) release(k RowKey, n int64) Result {
	r := s.rows[k]
	if r == nil {
		return Result{Code: CodeNotFound}
	}
	if r.count > CountMax-n {
		return Result{Code: CodeOverflow, Detail: "release would carry the count past 4611686018427387903"}
	}
	r.count += n
	r.group.add(n)
	return Result{Code: CodeOK, Count: r.count}
}

func (s *State) stock(k RowKey, count, price int64) Result {
	r := s.rows[k]
	if r == nil {
		r = s.insert(k)
	}
	r.group.sub(r.count)
	r.group.add(count)
	r.count = count
	r.price = price
	return Result{Code: CodeOK, Count: count, Price: price}
}

// insert adds a row with count 0, in warehouse order within its group.
func (s *State) insert(k RowKey) *row {
	gk := k.Group()
	g := s.groups[gk]
	if g == nil {
		g = &group{key: gk}
		s.groups[gk] = g
		s.skus[k.SKU] = append(s.skus[k.SKU], g)
	}
	r := &row{key: k, group: g}
	i, found := slices.BinarySearchFunc(g.rows, k.Warehouse, func(r *row, w string) int {
		return cmp.Compare(r.key.Warehouse, w)
	})
	if found {
		panic(fmt.Sprintf("inventory: row %v is in its group but not in the row map", k))
	}
	g.rows = slices.Insert(g.rows, i, r)
	s.rows[k] = r
	return r
}

// Len returns the number of rows.
func (s *State) Len() int { return len(s.rows) }

// Row returns row k and whether it exists.
func (s *State) Row(k RowKey) (Row, bool) {
	r := s.rows[k]
	if r == nil {
		return Row{}, false
	}
	return Row{Key: r.key, Count: r.count, Price: r.price}, true
}

// Available returns the total of group g, saturated at math.MaxInt64; 0 for
// an unknown group.
func (s *State) Available(g GroupKey) int64 {
	if grp := s.groups[g]; grp != nil {
		return grp.available()
	}
	return 0
}

// RowsOfSKU returns the rows of one SKU ordered by (warehouse, condition,
// source).
func (s *State) RowsOfSKU(sku string) []Row {
	var out []Row
	for _, g := range s.skus[sku] {
		for _, r := range g.rows {
			out = append(out, Row{Key: r.key, Count: r.count, Price: r.price})
		}
	}
	slices.SortFunc(out, func(a, b Row) int { return CompareRowKeys(a.Key, b.Key) })
	return out
}

// Rows returns every row, ordered by key. It is what snapshots and the bench
// checker read.
func (s *State) Rows() []Row {
	out := make([]Row, 0, len(s.rows))
	for _, r := range s.rows {
		out = append(out, Row{Key: r.key, Count: r.count, Price: r.price})
	}
	slices.SortFunc(out, func(a, b Row) int { return CompareRowKeys(a.Key, b.Key) })
	return out
}

// CompareRowKeys orders keys by sku, warehouse, condition, source.
func CompareRowKeys(a, b RowKey) int {
	if c := cmp.Compare(a.SKU, b.SKU); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Warehouse, b.Warehouse); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Condition, b.Condition); c != 0 {
		return c
	}
	return cmp.Compare(a.Source, b.Source)
}

// Clone returns a deep copy of s. Strings are shared: they are immutable.
func (s *State) Clone() *State {
	c := NewState()
	for _, r := range s.Rows() {
		c.stock(r.Key, r.Count, r.Price)
	}
	return c
}

// CheckInvariants verifies every invariant of the type comment and returns
// the first one broken, or nil. It walks all state: for tests and recovery,
// not for the hot path.
func (s *State) CheckInvariants() error {
	n := 0
	for gk, g := range s.groups {
		var hi, lo uint64
		for i, r := range g.rows {
			if r.group != g || r.key.Group() != gk {
				return fmt.Errorf("inventory: row %v is filed under group %v", r.key, gk)
			}
			if s.rows[r.key] != r {
				return fmt.Errorf("inventory: row %v is in its group but not the row map", r.key)
			}
			if r.count < 0 || r.count > CountMax {
				return fmt.Errorf("inventory: row %v has count %d", r.key, r.count)
			}
			if i > 0 && g.rows[i-1].key.Warehouse >= r.key.Warehouse {
				return fmt.Errorf("inventory: group %v rows out of warehouse order at %d", gk, i)
			}
			var carry uint64
			lo, carry = bits.Add64(lo, uint64(r.count), 0)
			hi += carry
		}
		if hi != g.totalHi || lo != g.totalLo {
			return fmt.Errorf("inventory: group %v total %d:%d, rows sum to %d:%d", gk, g.totalHi, g.totalLo, hi, lo)
		}
		n += len(g.rows)
	}
	if n != len(s.rows) {
		return fmt.Errorf("inventory: %d rows in groups, %d in the row map", n, len(s.rows))
	}
	return nil
}

// AppendRows appends every row to dst in no particular order: the cheap
// copy the engine takes on its writer goroutine for a snapshot, which is
// sorted later on another goroutine.
func (s *State) AppendRows(dst []Row) []Row {
	for _, r := range s.rows {
		dst = append(dst, Row{Key: r.key, Count: r.count, Price: r.price})
	}
	return dst
}
