package inventory

import (
	"fmt"
	"runtime"
	"slices"
	"sync/atomic"
)

// Frozen is the state as it was when Freeze was called (the cut), for a
// snapshot: another goroutine reads it (AppendRows, Sections) while the
// writer goes on applying ops.
//
// Freeze costs O(chunks), not O(rows): it copies the slices of chunk
// pointers of the rows and the hold log, the idempotency keys' chunk list
// (their entries are append-only), and clones the catalog's B-tree (copy
// on write inside the B-tree). What the writer changes after the cut is
// kept for the reader chunk by chunk: before its first write to a row or
// hold chunk the reader has not read yet, the writer copies that chunk's
// values (count and price; a hold's state and finish time) aside, and the
// reader takes the copy instead of the live chunk. Keys, groups, hold ids
// and allocations never change once written, so they are read live.
//
// Rejected: copying every row, hold and key under the engine lock, which
// stopped the writer for O(state) per snapshot (tens of milliseconds at a
// million rows); and forking a second state that replays the journal,
// which doubles memory and CPU all the time for a snapshot now and then.
//
// One Frozen at a time; Thaw it (on the writer's goroutine, or under the
// lock that serialises the writer) once the reader is done.
type Frozen struct {
	now, retention int64

	rowChunks []*[chunkLen]row
	rowsN     int
	rowGuard  chunkGuard
	rowPre    []*[chunkLen]rowValue // set by the writer before it marks the chunk preserved

	holdChunks []*[chunkLen]*hold
	holdsN     int
	holdGuard  chunkGuard
	holdPre    []*[chunkLen]holdValue

	encoders []frozenSection
}

type frozenSection struct {
	tag    byte
	encode func(dst []byte) []byte
}

// chunkLen is how many rows (or holds) one chunk holds: what the writer
// copies aside on its first write to a chunk during a snapshot.
const chunkLen = 256

type rowValue struct{ count, price int64 }

type holdValue struct {
	state      HoldState
	finishedAt int64
}

// Freeze returns the state as it is now, for a reader on another
// goroutine; see Frozen. It panics if the state is frozen already.
func (s *State) Freeze() *Frozen {
	if s.frozen != nil {
		panic("inventory: Freeze while a frozen view is out")
	}
	f := &Frozen{
		now:        s.now,
		retention:  s.retention,
		rowChunks:  slices.Clone(s.rowChunks),
		rowsN:      s.rowsN,
		holdChunks: slices.Clone(s.holdChunks),
		holdsN:     s.holdsN,
	}
	f.rowGuard.init(len(f.rowChunks))
	f.rowPre = make([]*[chunkLen]rowValue, len(f.rowChunks))
	f.holdGuard.init(len(f.holdChunks))
	f.holdPre = make([]*[chunkLen]holdValue, len(f.holdChunks))
	for _, t := range sectionTags() {
		f.encoders = append(f.encoders, frozenSection{tag: t, encode: sections[t].freeze(s, f)})
	}
	s.frozen = f
	return f
}

// Thaw ends f: the writer stops keeping values for it. Call it on the
// writer's side once f's reader is done.
func (s *State) Thaw(f *Frozen) {
	if s.frozen != f {
		panic("inventory: Thaw of a view that is not the state's")
	}
	s.frozen = nil
}

// Len returns the number of rows at the cut.
func (f *Frozen) Len() int { return f.rowsN }

// AppendRows appends every row as it was at the cut, in no particular
// order.
func (f *Frozen) AppendRows(dst []Row) []Row {
	for c, chunk := range f.rowChunks {
		n := min(chunkLen, f.rowsN-c*chunkLen)
		if f.rowGuard.startRead(c) {
			for i := range n {
				r := &chunk[i]
				dst = append(dst, Row{Key: r.key, Count: r.count, Price: r.price})
			}
			f.rowGuard.endRead(c)
			continue
		}
		pre := f.rowPre[c]
		for i := range n {
			dst = append(dst, Row{Key: chunk[i].key, Count: pre[i].count, Price: pre[i].price})
		}
	}
	return dst
}

// Sections encodes every section but the rows as it was at the cut, as
// State.Sections does.
func (f *Frozen) Sections() []Section {
	out := make([]Section, 0, len(f.encoders))
	for _, e := range f.encoders {
		out = append(out, Section{Tag: e.tag, Bytes: e.encode(nil)})
	}
	return out
}

// holds returns the holds as they were at the cut, with their state and
// finish time then.
func (f *Frozen) holds() []holdRecord {
	var out []holdRecord
	for c, chunk := range f.holdChunks {
		n := min(chunkLen, f.holdsN-c*chunkLen)
		if f.holdGuard.startRead(c) {
			for i := range n {
				h := chunk[i]
				out = append(out, holdRecord{h: h, holdValue: holdValue{state: h.state, finishedAt: h.finishedAt}})
			}
			f.holdGuard.endRead(c)
			continue
		}
		pre := f.holdPre[c]
		for i := range n {
			out = append(out, holdRecord{h: chunk[i], holdValue: pre[i]})
		}
	}
	return out
}

// touchRow is called before every change of r's count or price. Small
// enough to inline: without a snapshot out it costs the nil test.
func (s *State) touchRow(r *row) {
	if s.frozen != nil {
		s.touchFrozenRow(r)
	}
}

func (s *State) touchFrozenRow(r *row) {
	if f := s.frozen; int(r.slot) < f.rowsN {
		preserve(&f.rowGuard, f.rowChunks, f.rowPre, int(r.slot)/chunkLen, f.rowsN, func(r *row) rowValue {
			return rowValue{count: r.count, price: r.price}
		})
	}
}

// touchHold is called before every change of h's state or finish time.
func (s *State) touchHold(h *hold) {
	if f := s.frozen; f != nil && h.logPos < f.holdsN {
		preserve(&f.holdGuard, f.holdChunks, f.holdPre, h.logPos/chunkLen, f.holdsN, func(h **hold) holdValue {
			return holdValue{state: (*h).state, finishedAt: (*h).finishedAt}
		})
	}
}

// preserve copies the values of chunk c (of n items in all at the cut)
// into pre[c] before the writer's first change to it, unless the reader
// has read it already.
func preserve[T, V any](g *chunkGuard, chunks []*[chunkLen]T, pre []*[chunkLen]V, c, n int, value func(*T) V) {
	if !g.claim(c) {
		return
	}
	copied := new([chunkLen]V)
	chunk := chunks[c]
	for i := range min(chunkLen, n-c*chunkLen) {
		copied[i] = value(&chunk[i])
	}
	pre[c] = copied
	g.preserved(c)
}

// chunkGuard tells the writer and a Frozen's reader, chunk by chunk, who
// reads what: the reader reads a chunk live unless the writer got to it
// first and copied it aside; the writer waits only while the reader is
// inside that one chunk (O(chunkLen)).
type chunkGuard struct {
	states []atomic.Uint32
}

const (
	chunkUnread     = iota // neither has touched it
	chunkReading           // the reader is reading it live
	chunkRead              // the reader is done with it: the writer may change it
	chunkPreserving        // the writer is copying it aside
	chunkPreserved         // the copy is ready; the reader takes it
)

func (g *chunkGuard) init(n int) { g.states = make([]atomic.Uint32, n) }

// claim is the writer's: it reports whether the writer must copy chunk c
// aside (then call preserved) before it changes it.
func (g *chunkGuard) claim(c int) bool {
	st := &g.states[c]
	for {
		switch st.Load() {
		case chunkRead, chunkPreserved:
			return false
		case chunkUnread:
			if st.CompareAndSwap(chunkUnread, chunkPreserving) {
				return true
			}
		case chunkReading:
			runtime.Gosched()
		default:
			panic(fmt.Sprintf("inventory: chunk %d claimed while the writer preserves it", c))
		}
	}
}

func (g *chunkGuard) preserved(c int) { g.states[c].Store(chunkPreserved) }

// startRead is the reader's: true means read chunk c live and call
// endRead; false means read the writer's copy, which is ready.
func (g *chunkGuard) startRead(c int) bool {
	st := &g.states[c]
	if st.CompareAndSwap(chunkUnread, chunkReading) {
		return true
	}
	for st.Load() != chunkPreserved {
		runtime.Gosched()
	}
	return false
}

func (g *chunkGuard) endRead(c int) { g.states[c].Store(chunkRead) }
