package inventory

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
)

// AppendHolds encodes every hold the state remembers (held and finished
// within the window), for a snapshot:
//
//	count | per hold: id, state u8, expires-at, finished-at, fingerprint
//	u64 LE, allocation count, per allocation: row key, count
//
// Holds are written in id order so that the same state gives the same
// bytes.
func (s *State) AppendHolds(dst []byte) []byte {
	recs := make([]holdRecord, 0, len(s.holds))
	for _, h := range s.holds {
		recs = append(recs, holdRecord{h: h, holdValue: holdValue{state: h.state, finishedAt: h.finishedAt}})
	}
	return appendHoldRecords(dst, recs, s.now, s.retention)
}

// holdRecord is a hold with its state and finish time as of some moment
// (now, or a Frozen's cut): the parts of a hold that change.
type holdRecord struct {
	h *hold
	holdValue
}

// appendHoldRecords encodes the records a snapshot keeps at time now (held,
// or finished within the retention window), in id order. A record outside
// the window is left out; so is one collected. One replaced by a later
// hold with its id is left out too: the hold log (a Frozen's records)
// still lists it, and it is not always outside the window now, since the
// window it was replaced under may have been shorter (replay runs under
// ReplayRetentionMS; an operator may raise --retention and restart). The
// later hold is the one further along the log.
func appendHoldRecords(dst []byte, recs []holdRecord, now, retention int64) []byte {
	recs = slices.DeleteFunc(recs, func(r holdRecord) bool {
		return r.state != HoldHeld && r.finishedAt+retention <= now
	})
	slices.SortFunc(recs, func(a, b holdRecord) int {
		if c := strings.Compare(a.h.id, b.h.id); c != 0 {
			return c
		}
		return cmp.Compare(a.h.logPos, b.h.logPos)
	})
	kept := recs[:0]
	for i, rec := range recs {
		if i+1 < len(recs) && recs[i+1].h.id == rec.h.id {
			continue // replaced by recs[i+1]
		}
		kept = append(kept, rec)
	}
	recs = kept
	dst = binary.AppendUvarint(dst, uint64(len(recs)))
	for _, rec := range recs {
		h := rec.h
		dst = AppendString(dst, h.id)
		dst = append(dst, byte(rec.state))
		dst = binary.AppendUvarint(dst, uint64(h.expiresAt))
		dst = binary.AppendUvarint(dst, uint64(rec.finishedAt))
		dst = binary.LittleEndian.AppendUint64(dst, h.fingerprint)
		dst = binary.AppendUvarint(dst, uint64(len(h.alloc)))
		for _, a := range h.alloc {
			dst = appendRowKey(dst, a.row.key)
			dst = binary.AppendUvarint(dst, uint64(a.count))
		}
	}
	return dst
}

// LoadHolds reads what AppendHolds wrote into a state whose rows are
// loaded already.
func (s *State) LoadHolds(b []byte) error {
	d := Decoder{buf: b}
	n, err := d.Uvarint()
	if err != nil {
		return err
	}
	var finished []*hold
	for i := uint64(0); i < n; i++ {
		h := &hold{}
		if h.id, err = d.String(); err != nil {
			return err
		}
		if bad := CheckID(h.id); bad != "" {
			// No op could have made it, and none could name it: an
			// expiry of it would be refused as invalid, and the engine
			// stops at an expiry that changes nothing.
			return fmt.Errorf("hold id %q %s", h.id, bad)
		}
		st, err := d.Byte()
		if err != nil {
			return err
		}
		h.state = HoldState(st)
		if h.state < HoldHeld || h.state > HoldExpired {
			return fmt.Errorf("hold %q: state %d", h.id, st)
		}
		if h.expiresAt, err = d.Int62(); err != nil {
			return err
		}
		if h.finishedAt, err = d.Int62(); err != nil {
			return err
		}
		if len(d.buf)-d.pos < 8 {
			return ErrShort
		}
		h.fingerprint = binary.LittleEndian.Uint64(d.buf[d.pos:])
		d.pos += 8
		na, err := d.Uvarint()
		if err != nil {
			return err
		}
		if na > uint64(len(d.buf)) {
			return fmt.Errorf("hold %q: %d allocations", h.id, na)
		}
		for j := uint64(0); j < na; j++ {
			var k RowKey
			if err := d.rowKey(&k); err != nil {
				return err
			}
			c, err := d.Int62()
			if err != nil {
				return err
			}
			r := s.rows[k]
			if r == nil {
				return fmt.Errorf("hold %q: row %v is not in the snapshot", h.id, k)
			}
			h.alloc = append(h.alloc, holdAlloc{row: r, count: c})
		}
		if _, dup := s.holds[h.id]; dup {
			return fmt.Errorf("hold %q appears twice", h.id)
		}
		s.holds[h.id] = h
		s.logHold(h)
		if h.state == HoldHeld {
			s.pushDeadline(deadline{at: h.expiresAt, h: h})
			s.stats.HoldsActive++
		} else {
			finished = append(finished, h)
		}
	}
	if !d.Done() {
		return fmt.Errorf("bytes after the last hold")
	}
	slices.SortStableFunc(finished, func(a, b *hold) int {
		if a.finishedAt < b.finishedAt {
			return -1
		}
		if a.finishedAt > b.finishedAt {
			return 1
		}
		return 0
	})
	s.finished = append(s.finished, finished...)
	return nil
}

// AppendKeys encodes every idempotency key the state remembers, for a
// snapshot.
func (s *State) AppendKeys(dst []byte) []byte { return s.keys.appendLive(dst) }

// LoadKeys reads what AppendKeys wrote.
func (s *State) LoadKeys(b []byte) error { return s.keys.load(b) }

// checkHolds verifies the holds' invariants: every held hold's rows are the
// state's rows, the active count matches, every held hold's deadline is in
// the expiry heap, which is in order.
func (s *State) checkHolds() error {
	var active int64
	for id, h := range s.holds {
		if h.id != id {
			return fmt.Errorf("inventory: hold %q filed under %q", h.id, id)
		}
		if h.state == HoldHeld {
			active++
		}
		if h.logPos >= s.holdsN || s.holdChunks[h.logPos/chunkLen][h.logPos%chunkLen] != h {
			return fmt.Errorf("inventory: hold %q is not in the hold log at %d", id, h.logPos)
		}
		for _, a := range h.alloc {
			if s.rows[a.row.key] != a.row || a.count <= 0 {
				return fmt.Errorf("inventory: hold %q has a bad allocation on %v", id, a.row.key)
			}
		}
	}
	if active != s.stats.HoldsActive {
		return fmt.Errorf("inventory: %d holds held, counter says %d", active, s.stats.HoldsActive)
	}
	// Every held hold comes due: its deadline is in the expiry heap (stale
	// entries of finished or replaced holds may be there too), and the
	// heap is in order, or a hold would expire late or never.
	due := make(map[*hold]bool, active)
	for i, d := range s.deadlines {
		if i > 0 && d.before(s.deadlines[(i-1)/2]) {
			return fmt.Errorf("inventory: expiry heap out of order at %d", i)
		}
		if d.h.state == HoldHeld && s.holds[d.h.id] == d.h && d.at == d.h.expiresAt {
			due[d.h] = true
		}
	}
	for id, h := range s.holds {
		if h.state == HoldHeld && !due[h] {
			return fmt.Errorf("inventory: held hold %q has no deadline at %d in the expiry heap", id, h.expiresAt)
		}
	}
	return nil
}

// Section is one part of a snapshot other than the rows, as the state
// machine encodes it: the journal stores it as a tag and bytes and gives it
// back on recovery, without knowing what is in it.
type Section struct {
	Tag   byte
	Bytes []byte
}

// Snapshot section tags. The numbers are stable: they are written to
// snapshot files. A snapshot with a tag this release does not know is
// refused on recovery.
const (
	SectionTime  byte = 2 // the state's time and retention
	SectionHolds byte = 3
	SectionKeys  byte = 4
	// 5 and up: kept for the catalog.
)

type sectionCodec struct {
	appendTo func(s *State, dst []byte) []byte
	load     func(s *State, b []byte) error
	// freeze returns the encoder of the section as it is at f's cut,
	// which runs on another goroutine while the writer goes on (see
	// Frozen). It runs under the writer's lock: O(1) or O(chunks), never
	// O(state).
	freeze func(s *State, f *Frozen) func(dst []byte) []byte
}

var sections = map[byte]sectionCodec{
	SectionTime: {
		appendTo: func(s *State, dst []byte) []byte {
			dst = binary.AppendUvarint(dst, uint64(s.now))
			return binary.AppendUvarint(dst, uint64(s.retention))
		},
		load: func(s *State, b []byte) error {
			d := Decoder{buf: b}
			now, err := d.Int62()
			if err != nil {
				return err
			}
			if _, err := d.Int62(); err != nil { // the retention then; the engine's config rules now
				return err
			}
			s.SetTime(now)
			return nil
		},
	},
	SectionHolds: {appendTo: (*State).AppendHolds, load: (*State).LoadHolds,
		freeze: func(s *State, f *Frozen) func([]byte) []byte {
			return func(dst []byte) []byte { return appendHoldRecords(dst, f.holds(), f.now, f.retention) }
		},
	},
	SectionKeys: {appendTo: (*State).AppendKeys, load: (*State).LoadKeys,
		freeze: func(s *State, f *Frozen) func([]byte) []byte { return s.keys.freeze().appendAll }},
}

func init() {
	tc := sections[SectionTime]
	tc.freeze = func(s *State, f *Frozen) func([]byte) []byte {
		return func(dst []byte) []byte {
			dst = binary.AppendUvarint(dst, uint64(f.now))
			return binary.AppendUvarint(dst, uint64(f.retention))
		}
	}
	sections[SectionTime] = tc
}

// DefineSection registers a snapshot section (for state kept beside the
// rows, such as the catalog). It is called from init functions. freeze is
// sectionCodec.freeze.
func DefineSection(tag byte, appendTo func(s *State, dst []byte) []byte, load func(s *State, b []byte) error, freeze func(s *State, f *Frozen) func(dst []byte) []byte) {
	if _, dup := sections[tag]; dup || tag < 2 {
		panic(fmt.Sprintf("inventory: snapshot section %d defined twice or reserved", tag))
	}
	sections[tag] = sectionCodec{appendTo: appendTo, load: load, freeze: freeze}
}

// sectionTags returns the defined section tags in order.
func sectionTags() []byte {
	tags := make([]byte, 0, len(sections))
	for t := range sections {
		tags = append(tags, t)
	}
	slices.Sort(tags)
	return tags
}

// Sections encodes every section of the state but its rows, in tag order.
// It copies: the caller may write the result while the state goes on.
func (s *State) Sections() []Section {
	tags := sectionTags()
	out := make([]Section, 0, len(tags))
	for _, t := range tags {
		out = append(out, Section{Tag: t, Bytes: sections[t].appendTo(s, nil)})
	}
	return out
}

// LoadSection loads one section into a state whose rows are loaded.
func (s *State) LoadSection(sec Section) error {
	c, ok := sections[sec.Tag]
	if !ok {
		return fmt.Errorf("snapshot section %d is unknown to this release", sec.Tag)
	}
	return c.load(s, sec.Bytes)
}
