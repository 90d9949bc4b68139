package inventory

import (
	"encoding/binary"
	"fmt"
	"strconv"
)

// Limits of holds and orders. They are part of the wire contract.
const (
	// HoldLinesMax is the most lines a hold or an order may have.
	HoldLinesMax = 64
	// HoldTTLMax is the longest a hold may live, in milliseconds (7 days).
	HoldTTLMax = 7 * 24 * 3600 * 1000
	// RetentionDefault is how long a finished hold and an idempotency key
	// are remembered, in milliseconds of the engine's clock (24 h).
	RetentionDefault = 24 * 3600 * 1000
	// ReplayRetentionMS is the retention window to replay journaled ops
	// with (recovery, a standby applying its primary's frames, a change
	// stream follower): the shortest there is. A journaled op was new
	// when it was applied (a repeat changes nothing and is not
	// journaled), so its hold id or key was unknown or past the window
	// then, and past any shorter one too. The window the ops were applied
	// with is not journaled: replaying under a longer one (an operator
	// raised --retention and restarted, a standby configured apart from
	// its primary) took an id or key reused past the old window for a
	// repeat and refused the journal.
	ReplayRetentionMS = 1
)

// hold is one hold, live or finished.
//
// Its units are out of the rows' counts from the moment it is taken, so a
// row's count is always what is still sellable. alloc keeps row pointers:
// returning units on cancel or expiry is no lookup.
type hold struct {
	id         string
	state      HoldState
	expiresAt  int64
	finishedAt int64
	// fingerprint identifies the request's lines, in order: a repeat with
	// other lines, or the same lines in another order, is a mismatch.
	fingerprint uint64
	logPos      int         // its place in the hold log (State.holdChunks)
	alloc       []holdAlloc // in reply order; replies are built from it
}

type holdAlloc struct {
	row   *row
	count int64
}

// deadline is an entry of the expiry heap. An entry whose hold is no longer
// held (confirmed, cancelled, expired, or replaced after its retention) is
// stale and dropped when it reaches the top: removing it from the middle of
// the heap would cost a search.
type deadline struct {
	at int64
	h  *hold
}

// demandGroup is a group's summed demand in a hold or an order.
type demandGroup struct {
	key  GroupKey
	g    *group
	n    int64
	line int // the first request line naming the group
}

func init() {
	holdCheck := func(op *Op) string {
		if d := CheckID(op.Hold); d != "" {
			return "hold " + d
		}
		return ""
	}
	define(KindHold, &descriptor{
		name: "hold", mutates: true, since: 2,
		checkLines: func(op *Op, linesValid bool) string {
			if d := holdCheck(op); d != "" {
				return d
			}
			if op.TTL < 1 || op.TTL > HoldTTLMax {
				return "ttl must be an integer from 1 to 604800000 milliseconds"
			}
			return checkDemand(op.Lines, linesValid)
		},
		apply: func(s *State, op *Op, res *Result) { s.hold(op, res) },
		encode: func(dst []byte, op *Op) []byte {
			dst = AppendString(dst, op.Hold)
			dst = binary.AppendUvarint(dst, uint64(op.TTL))
			return appendDemand(dst, op.Lines)
		},
		decode: func(d *Decoder, op *Op) (err error) {
			if op.Hold, err = d.String(); err != nil {
				return err
			}
			if op.TTL, err = d.Int62(); err != nil {
				return err
			}
			return d.demand(op)
		},
	})
	holdOnly := func(name string, k Kind, mutates bool, apply func(s *State, op *Op, res *Result)) {
		dsc := &descriptor{name: name, mutates: mutates, since: 2, check: holdCheck, apply: apply}
		if mutates {
			dsc.encode = func(dst []byte, op *Op) []byte { return AppendString(dst, op.Hold) }
			dsc.decode = func(d *Decoder, op *Op) (err error) {
				op.Hold, err = d.String()
				return err
			}
		}
		define(k, dsc)
	}
	holdOnly("confirm", KindConfirm, true, func(s *State, op *Op, res *Result) { s.confirm(op.Hold, res) })
	holdOnly("cancel", KindCancel, true, func(s *State, op *Op, res *Result) { s.cancel(op.Hold, res) })
	holdOnly("expire", KindExpire, true, func(s *State, op *Op, res *Result) { s.expireOp(op.Hold, res) })
	holdOnly("hold.get", KindHoldGet, false, func(s *State, op *Op, res *Result) { s.holdGet(op.Hold, res) })
	define(KindOrder, &descriptor{
		name: "order", mutates: true, keyed: true, since: 2,
		checkLines: func(op *Op, linesValid bool) string { return checkDemand(op.Lines, linesValid) },
		apply:      func(s *State, op *Op, res *Result) { s.order(op, res) },
		encode: func(dst []byte, op *Op) []byte {
			return appendDemand(dst, op.Lines)
		},
		decode: func(d *Decoder, op *Op) error { return d.demand(op) },
	})
}

// checkDemand checks the lines of a hold or an order: their number, then
// each line in request order, its group's identifiers (unless linesValid:
// its caller found each of them valid already) before its quantity. The
// first broken rule is the answer, so a line's bad quantity is reported
// before a later line's bad sku either way: the rules interleave line by
// line, so they are one loop whose identifier checks can be skipped, not
// a key step and a fields step (descriptor.checkKey, checkFields).
func checkDemand(lines []Demand, linesValid bool) string {
	if len(lines) == 0 || len(lines) > HoldLinesMax {
		return "a hold or an order takes 1 to 64 lines"
	}
	for i := range lines {
		if !linesValid {
			if d := CheckGroupKey(lines[i].Group); d != "" {
				return "line " + strconv.Itoa(i+1) + ": " + d
			}
		}
		if d := CheckQuantity(lines[i].N); d != "" {
			return "line " + strconv.Itoa(i+1) + ": " + d
		}
	}
	return ""
}

// fingerprintDemand hashes lines in order (FNV-1a, 64 bits).
func fingerprintDemand(lines []Demand) uint64 {
	h := fnvOffset
	for i := range lines {
		l := &lines[i]
		h = fnvString(h, l.Group.SKU)
		h = fnvString(h, l.Group.Condition)
		h = fnvString(h, l.Group.Source)
		h = fnvUint(h, uint64(l.N))
	}
	return h
}

// sumDemand sums lines per group, groups in the order of their first line.
// It returns the index of the first group that is short, or -1.
func (s *State) sumDemand(lines []Demand) ([]demandGroup, int) {
	gs := s.demandScratch[:0]
	for i := range lines {
		l := &lines[i]
		j := 0
		for j < len(gs) && gs[j].key != l.Group {
			j++
		}
		if j == len(gs) {
			gs = append(gs, demandGroup{key: l.Group, g: s.lookupGroup(l.Group), line: i})
		}
		gs[j].n += l.N
	}
	s.demandScratch = gs
	for j := range gs {
		if gs[j].g == nil || !gs[j].g.atLeast(gs[j].n) {
			return gs, j
		}
	}
	return gs, -1
}

// take allocates every group's demand with the domain rule and appends the
// row shares to alloc.
func (s *State) take(gs []demandGroup, alloc []holdAlloc) []holdAlloc {
	for j := range gs {
		remaining := gs[j].n
		for _, r := range gs[j].g.rows {
			if r.count == 0 {
				continue
			}
			t := min(r.count, remaining)
			s.touchRow(r)
			r.count -= t
			remaining -= t
			alloc = append(alloc, holdAlloc{row: r, count: t})
			if remaining == 0 {
				break
			}
		}
		if remaining != 0 {
			panic(fmt.Sprintf("inventory: group %v total covered %d but rows fell short by %d", gs[j].key, gs[j].n, remaining))
		}
		gs[j].g.sub(gs[j].n)
	}
	return alloc
}

func insufficient(gs []demandGroup, short int, res *Result) {
	res.Code = CodeInsufficient
	res.ShortLine = gs[short].line
	if gs[short].g != nil {
		res.Available = gs[short].g.available()
	}
}

// allocations returns alloc as a reply gives it, in the buffer the caller
// of ApplyInto lent (see State.allocOut), or in a new slice. A hold keeps
// only alloc: a reply slice kept per hold was 72 bytes a line retained
// for the whole retention window, most of a confirmed hold's memory.
func (s *State) allocations(alloc []holdAlloc) []Allocation {
	out := s.allocOut[:0]
	s.allocOut = nil // lent for one reply
	if cap(out) < len(alloc) {
		out = make([]Allocation, 0, max(len(alloc), 4))
	}
	for _, a := range alloc {
		out = append(out, Allocation{Row: a.row.key, Count: a.count})
	}
	return out
}

// liveHold returns hold id, or nil when it is unknown or finished longer
// ago than the retention window.
func (s *State) liveHold(id string) *hold {
	h := s.holds[id]
	if h == nil || (h.state != HoldHeld && h.finishedAt+s.retention <= s.now) {
		return nil
	}
	return h
}

func (s *State) hold(op *Op, res *Result) {
	fp := fingerprintDemand(op.Lines)
	if h := s.liveHold(op.Hold); h != nil {
		if h.fingerprint != fp {
			s.stats.Mismatches++
			res.Code, res.Detail = CodeMismatch, "hold "+op.Hold+" exists with other lines"
			return
		}
		s.stats.Repeats++
		res.Repeat = true
		res.ExpiresAt = h.expiresAt
		res.Allocations = s.allocations(h.alloc)
		return
	}
	gs, short := s.sumDemand(op.Lines)
	if short >= 0 {
		insufficient(gs, short, res)
		return
	}
	h := &hold{id: op.Hold, state: HoldHeld, expiresAt: s.now + op.TTL, fingerprint: fp}
	h.alloc = s.take(gs, make([]holdAlloc, 0, len(gs)))
	if s.holds[op.Hold] != nil {
		s.holdsDead++ // a record past its retention, replaced
	}
	s.holds[op.Hold] = h
	s.logHold(h)
	s.pushDeadline(deadline{at: h.expiresAt, h: h})
	s.stats.HoldsActive++
	res.Changed = true
	res.ExpiresAt = h.expiresAt
	res.Allocations = s.allocations(h.alloc)
}

func (s *State) order(op *Op, res *Result) {
	gs, short := s.sumDemand(op.Lines)
	if short >= 0 {
		insufficient(gs, short, res)
		return
	}
	alloc := s.take(gs, s.allocScratch[:0])
	res.Changed = true
	res.Allocations = s.allocations(alloc)
	s.allocScratch = alloc[:0]
}

// finish ends a held hold in state st; cancel and expire return its units.
func (s *State) finish(h *hold, st HoldState) {
	if st != HoldConfirmed {
		for _, a := range h.alloc {
			r := a.row
			add := a.count
			if r.count > CountMax-add {
				add = CountMax - r.count
				s.stats.Capped++
			}
			s.touchRow(r)
			r.count += add
			r.group.add(add)
		}
	}
	s.touchHold(h)
	h.state = st
	h.finishedAt = s.now
	s.finished = append(s.finished, h)
	s.stats.HoldsActive--
	if st == HoldExpired {
		s.stats.Expired++
	}
}

func (s *State) confirm(id string, res *Result) {
	h := s.liveHold(id)
	if h == nil {
		res.Code = CodeNotFound
		return
	}
	switch h.state {
	case HoldHeld:
		if h.expiresAt <= s.now {
			s.finish(h, HoldExpired)
			res.Code, res.Changed = CodeExpired, true
			return
		}
		s.finish(h, HoldConfirmed)
		res.Changed = true
	case HoldConfirmed:
		res.Repeat = true
	case HoldCancelled:
		res.Code = CodeCancelled
	case HoldExpired:
		res.Code = CodeExpired
	}
}

func (s *State) cancel(id string, res *Result) {
	h := s.liveHold(id)
	if h == nil {
		res.Code = CodeNotFound
		return
	}
	switch h.state {
	case HoldHeld:
		if h.expiresAt <= s.now {
			s.finish(h, HoldExpired)
		} else {
			s.finish(h, HoldCancelled)
		}
		res.Changed = true
	case HoldConfirmed:
		res.Code = CodeConfirmed
	default:
		res.Repeat = true
	}
}

func (s *State) expireOp(id string, res *Result) {
	h := s.liveHold(id)
	if h == nil || h.state != HoldHeld || h.expiresAt > s.now {
		res.Code, res.Detail = CodeInvalid, "hold "+id+" is not held past its deadline"
		return
	}
	s.finish(h, HoldExpired)
	res.Changed = true
}

func (s *State) holdGet(id string, res *Result) {
	h := s.liveHold(id)
	if h == nil {
		res.Code = CodeNotFound
		return
	}
	// A hold past its deadline that the writer has not expired yet is
	// still held: its units are not back, and saying otherwise would hide
	// the expiry lag.
	res.State = h.state
	res.ExpiresAt = h.expiresAt
	res.Allocations = s.allocations(h.alloc)
}

// NextDue returns the id of a held hold whose deadline is at or before the
// state's time, the earliest first, or false when there is none. The
// engine's writer expires it with an Expire op (journaled), and asks again,
// a bounded number of times per batch.
func (s *State) NextDue() (string, bool) {
	top, ok := s.liveTop()
	if !ok || top.at > s.now {
		return "", false
	}
	return top.h.id, true
}

// NextDeadline returns the earliest deadline of a held hold, or false.
func (s *State) NextDeadline() (int64, bool) {
	top, ok := s.liveTop()
	return top.at, ok
}

// liveTop drops stale entries from the top of the expiry heap and returns
// the first live one.
func (s *State) liveTop() (deadline, bool) {
	for len(s.deadlines) > 0 {
		top := s.deadlines[0]
		if top.h.state == HoldHeld && s.holds[top.h.id] == top.h {
			return top, true
		}
		s.popDeadline()
	}
	return deadline{}, false
}

// HoldDue reports whether hold id is held past its deadline: the engine
// expires it (a journaled Expire) before it applies a confirm or cancel of
// it, so that the change stream shows the expiry as such.
func (s *State) HoldDue(id string) bool {
	h := s.liveHold(id)
	return h != nil && h.state == HoldHeld && h.expiresAt <= s.now
}

// before orders the expiry heap: by deadline, then by hold id, so that
// holds due at the same time come due in one order whatever the heap's
// history (a state restored from a snapshot pushes them in id order; the
// live one pushed them as they came), and the writer's journaled expiries
// do not depend on a restart.
func (a deadline) before(b deadline) bool {
	return a.at < b.at || (a.at == b.at && a.h.id < b.h.id)
}

func (s *State) pushDeadline(d deadline) {
	s.deadlines = append(s.deadlines, d)
	i := len(s.deadlines) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !s.deadlines[i].before(s.deadlines[p]) {
			break
		}
		s.deadlines[p], s.deadlines[i] = s.deadlines[i], s.deadlines[p]
		i = p
	}
}

func (s *State) popDeadline() {
	n := len(s.deadlines) - 1
	s.deadlines[0] = s.deadlines[n]
	s.deadlines[n] = deadline{}
	s.deadlines = s.deadlines[:n]
	i := 0
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && s.deadlines[l].before(s.deadlines[m]) {
			m = l
		}
		if r < n && s.deadlines[r].before(s.deadlines[m]) {
			m = r
		}
		if m == i {
			return
		}
		s.deadlines[i], s.deadlines[m] = s.deadlines[m], s.deadlines[i]
		i = m
	}
}

// collectHolds forgets up to max finished holds whose retention ended.
// Answers never depend on it (liveHold checks the window): it only frees
// memory, so it may run whenever the writer likes.
func (s *State) collectHolds(max int) {
	i := 0
	for i < len(s.finished) && i < max {
		h := s.finished[i]
		if h.finishedAt+s.retention > s.now {
			break
		}
		if s.holds[h.id] == h {
			delete(s.holds, h.id)
			s.holdsDead++
		}
		s.finished[i] = nil
		i++
	}
	s.finished = s.finished[i:]
	if s.holdsDead > len(s.holds) && s.holdsDead >= chunkLen && s.frozen == nil {
		s.compactHoldLog()
	}
}

// logHold appends h to the hold log.
func (s *State) logHold(h *hold) {
	c, i := s.holdsN/chunkLen, s.holdsN%chunkLen
	if c == len(s.holdChunks) {
		s.holdChunks = append(s.holdChunks, new([chunkLen]*hold))
	}
	s.holdChunks[c][i] = h
	h.logPos = s.holdsN
	s.holdsN++
}

// compactHoldLog rebuilds the hold log from the holds still remembered,
// into new chunks (a frozen view may still hold the old ones). It runs
// once the dead outnumber the living, so its cost is spread over as many
// collections.
func (s *State) compactHoldLog() {
	old, n := s.holdChunks, s.holdsN
	s.holdChunks, s.holdsN, s.holdsDead = nil, 0, 0
	for i := range n {
		if h := old[i/chunkLen][i%chunkLen]; s.holds[h.id] == h {
			s.logHold(h)
		}
	}
}

// FNV-1a, 64 bits: a fixed function, since fingerprints are kept in
// snapshots and compared across restarts.
const (
	fnvOffset uint64 = 14695981039346656037
	fnvPrime  uint64 = 1099511628211
)

func fnvString(h uint64, s string) uint64 {
	h = fnvUint(h, uint64(len(s)))
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime
	}
	return h
}

func fnvUint(h, v uint64) uint64 {
	for i := 0; i < 8; i++ {
		h ^= v & 0xff
		h *= fnvPrime
		v >>= 8
	}
	return h
}

func fnvBytes(h uint64, b []byte) uint64 {
	for _, c := range b {
		h ^= uint64(c)
		h *= fnvPrime
	}
	return h
}

// HoldExpiresAt returns the deadline of hold id, if the state knows it.
func (s *State) HoldExpiresAt(id string) (int64, bool) {
	h := s.liveHold(id)
	if h == nil {
		return 0, false
	}
	return h.expiresAt, true
}
