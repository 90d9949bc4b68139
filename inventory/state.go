package inventory

import (
	"cmp"
	"fmt"
	"math"
	"math/bits"
	"slices"

	"allot/catalog"
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
	// rowChunks holds the rows themselves, in insertion order (a row's
	// slot), chunkLen to a chunk: rows are never removed, so a snapshot
	// can freeze them by their chunk pointers (see Frozen).
	rowChunks []*[chunkLen]row
	rowsN     int
	skus      map[string]*group // each SKU's first group; the rest follow by nextInSKU, in creation order
	// recentGroups is a direct-mapped cache in front of groups (see
	// lookupGroup): hashing a group key's three strings for the map was
	// the largest part of a capture's cost in the state machine.
	recentGroups [recentGroupSlots]recentGroup

	// now is the time of the batch being applied, in milliseconds: the
	// engine's writer stamps each batch and journals the stamp; replay
	// sets the same stamps. It never decreases. The state machine reads
	// no clock.
	now int64
	// retention is how long finished holds and idempotency keys are
	// remembered, in milliseconds.
	retention int64

	holds     map[string]*hold
	deadlines []deadline // min-heap by at; see deadline
	finished  []*hold    // finished holds in finish order, for collection
	keys      keyTable
	catalog   *catalog.Catalog // nil until the first catalog op; see catalog_op.go
	// holdChunks logs every hold in creation order (a hold's logPos), so
	// that a snapshot can freeze them without walking the map; holdsDead
	// counts logged holds no longer in holds (compacted away when most
	// are, while no snapshot is frozen).
	holdChunks []*[chunkLen]*hold
	holdsN     int
	holdsDead  int
	frozen     *Frozen // the snapshot being read, or nil; see Frozen

	stats Stats

	// opArg is the copy of the op being applied (see Apply).
	opArg Op

	// Scratch buffers, reused across ops.
	demandScratch []demandGroup
	allocScratch  []holdAlloc
	// allocOut and hitsOut are the buffers ApplyInto lends for the op's
	// allocations and search hits, each taken by the one reply it is for.
	allocOut []Allocation
	hitsOut  []catalog.Result
	// skipCheck is set while applying an op its caller checked
	// (ApplyCheckedInto).
	skipCheck    bool
	opScratch    []byte
	replyScratch []byte
	// applying is the Result Apply fills: a local one escaped to the heap
	// through the descriptor's indirect apply call, one allocation per op
	// on the server's request path.
	applying Result
}

// Stats counts what the state machine did, for metrics.
type Stats struct {
	HoldsActive int64 // holds held now
	Expired     int64 // holds expired since the state was made (or loaded)
	Repeats     int64 // ops answered from an idempotency key or a hold id
	Mismatches  int64 // ops refused because their key or hold id was used with other arguments
	Capped      int64 // returned units that would have carried a row past CountMax
	Keys        int   // idempotency keys remembered
	KeyBytes    int   // bytes holding them
}

type row struct {
	key   RowKey
	count int64 // changed only after touchRow
	price int64 // changed only after touchRow
	group *group
	slot  int32 // its place in rowChunks
}

type group struct {
	key     GroupKey
	rows    []*row // ascending warehouse order
	totalHi uint64
	totalLo uint64
	// nextInSKU is the SKU's next group (State.skus holds the first): a
	// catalog record links to its SKU's first group, and a search result's
	// units then cost no map lookup (catalog_op.go). Groups are never
	// removed, so a link stays good. The struct stays in its 96-byte class.
	nextInSKU *group
}

// NewState returns an empty state.
func NewState() *State {
	return &State{
		rows:      make(map[RowKey]*row),
		groups:    make(map[GroupKey]*group),
		skus:      make(map[string]*group),
		retention: RetentionDefault,
		holds:     make(map[string]*hold),
		keys:      newKeyTable(),
	}
}

// SetTime sets the time of the ops applied next, in milliseconds; a time
// before the current one is ignored (time never goes back).
func (s *State) SetTime(ms int64) {
	if ms > s.now {
		s.now = ms
	}
}

// Now returns the state's time.
func (s *State) Now() int64 { return s.now }

// SetRetention sets how long finished holds and idempotency keys are
// remembered, in milliseconds (RetentionDefault unless set).
func (s *State) SetRetention(ms int64) { s.retention = ms }

// Retention returns the retention window, in milliseconds.
func (s *State) Retention() int64 { return s.retention }

// Stats returns the state machine's counters.
func (s *State) Stats() Stats {
	st := s.stats
	st.Keys, st.KeyBytes = s.keys.len(), s.keys.bytes()
	return st
}

// Collect frees memory of finished holds and idempotency keys whose
// retention ended, a bounded amount per call (the engine's writer calls it
// when its clock moved: once a millisecond at most). No answer depends on
// when it runs.
func (s *State) Collect() {
	s.collectHolds(4096)
	s.keys.collect(s.now, s.retention, false)
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
// not keep it, nor op.Lines. An op that changes nothing says so
// (Result.Changed false); only ops that changed state are journaled.
func (s *State) Apply(op *Op, lines []Line) Result { return s.ApplyInto(op, lines, nil) }

// Buffers are what a caller of ApplyInto lends for an op's reply: a
// hold's or an order's allocations, a search's hits. The Result aliases
// them (grown if needed) instead of new slices, so a caller that keeps
// them between ops (a server connection's requests) allocates nothing for
// replies. A nil field means none.
type Buffers struct {
	Allocations []Allocation
	Hits        []catalog.Result
}

// ApplyInto is Apply with buffers lent for the reply (nil for none).
func (s *State) ApplyInto(op *Op, lines []Line, buf *Buffers) Result {
	return s.applyInto(op, lines, buf, true)
}

// ApplyCheckedInto is ApplyInto for an op its caller has just checked
// with Op.Check and found valid (the engine does, to answer an invalid op
// without taking its lock): the state machine does not check it again.
func (s *State) ApplyCheckedInto(op *Op, lines []Line, buf *Buffers) Result {
	return s.applyInto(op, lines, buf, false)
}

func (s *State) applyInto(op *Op, lines []Line, buf *Buffers, check bool) Result {
	s.skipCheck = !check
	if buf != nil {
		s.allocOut, s.hitsOut = buf.Allocations, buf.Hits
	}
	// The op goes through the descriptor's functions, which the compiler
	// cannot see into: a pointer to the caller's op would make every
	// caller's op escape to the heap (an allocation per op on the memory
	// store). A copy kept in the state costs a copy of the struct instead.
	s.opArg = *op
	res := s.apply(&s.opArg, lines)
	s.opArg = Op{}
	s.allocOut, s.hitsOut = nil, nil
	return res
}

func (s *State) apply(op *Op, lines []Line) Result {
	if !s.skipCheck {
		if d := op.Check(); d != "" {
			return Result{Code: CodeInvalid, Detail: d}
		}
	}
	s.skipCheck = false
	desc := op.Kind.descriptor()
	s.applying = Result{Lines: lines}
	if op.IdempotencyKey == "" {
		desc.apply(s, op, &s.applying)
		res := s.applying
		s.applying = Result{}
		if res.Code != CodeOK || op.Kind != KindCapture {
			res.Lines = nil
		}
		return res
	}
	res := s.applying
	s.applying = Result{}
	s.opScratch = AppendOp(s.opScratch[:0], &Op{Kind: op.Kind, Key: op.Key, N: op.N, Price: op.Price, Hold: op.Hold, TTL: op.TTL, Lines: op.Lines, Record: op.Record})
	fp := fnvBytes(fnvOffset, s.opScratch)
	if e, ok := s.keys.lookup(op.IdempotencyKey); ok && e.stamp+s.retention > s.now {
		if e.fingerprint != fp {
			s.stats.Mismatches++
			return Result{Code: CodeMismatch, Detail: "key " + op.IdempotencyKey + " was used with other arguments"}
		}
		r, err := decodeReply(e.reply, lines)
		if err != nil {
			panic(fmt.Sprintf("inventory: remembered reply of key %q does not decode: %v", op.IdempotencyKey, err))
		}
		s.stats.Repeats++
		r.Repeat = true
		return r
	}
	desc.apply(s, op, &res)
	if res.Code != CodeOK || op.Kind != KindCapture {
		res.Lines = nil
	}
	if res.Code != CodeInvalid && res.Code != CodeOverflow {
		// The first reply, success or a business outcome, is what every
		// repeat gets.
		s.replyScratch = appendReply(s.replyScratch[:0], &res)
		s.keys.insert(op.IdempotencyKey, fp, s.replyScratch, s.now)
		res.Changed = true
	}
	return res
}

// recentGroupSlots is the size of State.recentGroups.
const recentGroupSlots = 64

// recentGroup is a slot of State.recentGroups: a group, and the key it
// was last asked for by (the group's own key, or an equal one whose
// strings are the caller's).
type recentGroup struct {
	key GroupKey
	g   *group
}

// lookupGroup returns group k, or nil when there is none. A client
// repeats the same few groups, so the group last found in k's slot of
// recentGroups is compared first: a compare of three short strings
// costs a fraction of hashing them, and less again when they are the
// very strings of the last ask (a connection's interner gives the same
// ones each time; a compare of equal pointers reads no bytes). The slot
// is picked by lengths and a few bytes of the key; only existing groups
// are remembered, and groups are never removed, so a remembered group
// stays good.
func (s *State) lookupGroup(k GroupKey) *group {
	n := len(k.SKU)
	if n == 0 {
		return s.groups[k]
	}
	slot := &s.recentGroups[(uint(n)*7+uint(k.SKU[0])+uint(k.SKU[n/2])*3+uint(k.SKU[n-1])*5+
		uint(len(k.Condition))*11+uint(len(k.Source))*13)%recentGroupSlots]
	if slot.g != nil && slot.key == k {
		slot.key = k
		return slot.g
	}
	g := s.groups[k]
	if g != nil {
		*slot = recentGroup{key: k, g: g}
	}
	return g
}

func (s *State) capture(k GroupKey, n int64, res *Result) {
	g := s.lookupGroup(k)
	if g == nil {
		res.Code = CodeInsufficient
		return
	}
	if !g.atLeast(n) {
		res.Code, res.Available = CodeInsufficient, g.available()
		return
	}
	lines := res.Lines[:0]
	remaining := n
	for _, r := range g.rows {
		if r.count == 0 {
			continue
		}
		take := min(r.count, remaining)
		s.touchRow(r)
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
	res.Lines, res.Changed = lines, true
}

func (s *State) release(k RowKey, n int64, res *Result) {
	r := s.rows[k]
	if r == nil {
		res.Code = CodeNotFound
		return
	}
	if r.count > CountMax-n {
		res.Code, res.Detail = CodeOverflow, "release would carry the count past 4611686018427387903"
		return
	}
	s.touchRow(r)
	r.count += n
	r.group.add(n)
	res.Count, res.Changed = r.count, true
}

func (s *State) stock(k RowKey, count, price int64, res *Result) {
	r := s.rows[k]
	if r == nil {
		r = s.insert(k)
	}
	s.touchRow(r)
	r.group.sub(r.count)
	r.group.add(count)
	r.count = count
	r.price = price
	res.Count, res.Price, res.Changed = count, price, true
}

// insert adds a row with count 0, in warehouse order within its group.
func (s *State) insert(k RowKey) *row {
	gk := k.Group()
	g := s.groups[gk]
	if g == nil {
		g = &group{key: gk}
		s.groups[gk] = g
		if first := s.skus[k.SKU]; first == nil {
			s.skus[k.SKU] = g
		} else {
			last := first
			for last.nextInSKU != nil {
				last = last.nextInSKU
			}
			last.nextInSKU = g
		}
	}
	r := s.newRow()
	r.key, r.group = k, g
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

// newRow returns the next free slot of rowChunks.
func (s *State) newRow() *row {
	c, i := s.rowsN/chunkLen, s.rowsN%chunkLen
	if c == len(s.rowChunks) {
		s.rowChunks = append(s.rowChunks, new([chunkLen]row))
	}
	r := &s.rowChunks[c][i]
	r.slot = int32(s.rowsN)
	s.rowsN++
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
	for g := s.skus[sku]; g != nil; g = g.nextInSKU {
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
	var res Result
	for _, r := range s.Rows() {
		c.stock(r.Key, r.Count, r.Price, &res)
	}
	c.now, c.retention = s.now, s.retention
	if err := c.LoadHolds(s.AppendHolds(nil)); err != nil {
		panic("inventory: clone: " + err.Error())
	}
	if err := c.LoadKeys(s.AppendKeys(nil)); err != nil {
		panic("inventory: clone: " + err.Error())
	}
	if err := c.loadCatalog(s.appendCatalog(nil)); err != nil {
		panic("inventory: clone: " + err.Error())
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
			if int(r.slot) >= s.rowsN || &s.rowChunks[r.slot/chunkLen][r.slot%chunkLen] != r {
				return fmt.Errorf("inventory: row %v is not in its slot %d", r.key, r.slot)
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
	return s.checkHolds()
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
