package changes

import (
	"errors"
	"fmt"

	"allot/inventory"
	"allot/journal"
	"allot/vfs"
)

// Follower turns the journal in one directory into events, from a cursor
// on. It owns a state machine rebuilt from the journal: it costs the memory
// of the inventory, which is why a Feed keeps only a few idle ones.
//
// A Follower is used by one goroutine at a time.
type Follower struct {
	state  *inventory.State
	reader *journal.Reader
	dec    *inventory.Decoder

	pos uint64 // the seq of the last op applied
	// kept is journal.Oldest when the follower started below it (from
	// the empty state, op 1 still on disk), else 0: see below.
	kept uint64

	// The frame being read: its first LSN, stamp and ops not read yet.
	frameLSN   uint64
	frameCount int
	frameStamp int64
	left       int

	op      inventory.Op
	lines   []inventory.Line
	touched []inventory.RowKey
	before  []rowBefore
}

type rowBefore struct {
	count  int64
	exists bool
}

// ErrNotReplayed is matched by the error of an op that does not apply on
// the follower's state as it did on the engine's: the journal and the
// state machine disagree, which is corruption or a bug, never skipped.
var ErrNotReplayed = errors.New("changes: a journaled op does not replay")

// NewFollower returns a follower of the journal in dir whose next event is
// seq after+1. It replays under the shortest retention window
// (inventory.ReplayRetentionMS), whatever the engine's: every journaled op
// was new when it was applied, and is new again under it. The journal must
// be durable up to after (the follower replays up to it before it
// returns). A cursor whose state can no
// longer be rebuilt fails with a *journal.TrimmedError.
//
// The engine may write a snapshot and trim the journal behind it while the
// follower loads an older one and replays from there: the older snapshot,
// or a segment after it, is gone before it is read. The cursor is then
// still readable from the new snapshot, so the follower starts again, up
// to followerAttemptsMax times, rather than refuse it.
func NewFollower(fs vfs.FS, dir string, after, durable uint64) (*Follower, error) {
	if fs == nil {
		fs = vfs.OS{}
	}
	for attempt := 1; ; attempt++ {
		f, err := newFollower(fs, dir, after, durable)
		if err == nil || attempt == followerAttemptsMax || !trimmedUnder(err) {
			return f, err
		}
		if te := (*journal.TrimmedError)(nil); errors.As(err, &te) && after+1 < te.Oldest {
			// The reader says the cursor itself is gone (ops a power cut
			// took from history: journal.Oldest, which reads names
			// only, does not know): starting again would replay to the
			// same place.
			return nil, err
		}
		oldest, _, oerr := oldestReadable(fs, dir)
		if oerr != nil {
			return nil, err
		}
		if after+1 < oldest {
			return nil, &journal.TrimmedError{Want: after + 1, Oldest: oldest}
		}
	}
}

// Oldest returns the oldest seq a reader of the journal in dir can resume
// from (the one a *journal.TrimmedError names): journal.Oldest, or 1
// while the journal still holds op 1.
func Oldest(fs vfs.FS, dir string) (uint64, error) {
	if fs == nil {
		fs = vfs.OS{}
	}
	oldest, _, err := oldestReadable(fs, dir)
	return oldest, err
}

// oldestReadable returns the oldest seq a follower can start after, and
// journal.Oldest (kept). journal.Oldest counts from the oldest snapshot the
// segments reach back to, but the empty state is where op 1 starts: while
// the first segment (journal.NewReader from 1 finds it) still holds op 1,
// every op is readable from there. Options.KeepSnapshots counts that state
// as one kept, so after the first snapshot a data directory keeps its
// whole history, and CHANGES 0 (DESIGN.md: "reads from the beginning")
// was refused as trimmed although op 1 was on disk.
//
// The history before kept is read on trust: segments left behind a
// snapshot installed from elsewhere, or an unsynced one a power cut
// tore, may break off before it. A follower reading below kept reports
// such a break as trimmed, naming kept (Follower.below).
func oldestReadable(fs vfs.FS, dir string) (oldest, kept uint64, err error) {
	kept, err = journal.Oldest(fs, dir)
	if err != nil || kept <= 1 {
		return kept, kept, err
	}
	r, err := journal.NewReader(fs, dir, 1)
	if err != nil {
		if errors.Is(err, journal.ErrTrimmed) {
			return kept, kept, nil
		}
		return 0, 0, err
	}
	r.Close()
	return 1, kept, nil
}

// followerAttemptsMax bounds NewFollower's fresh starts: each follows a
// snapshot written during the one before, a few a second at most.
const followerAttemptsMax = 4

// trimmedUnder reports whether err is what a follower meets when the
// journal is trimmed under it: a segment or the snapshot it was about to
// read removed.
func trimmedUnder(err error) bool {
	return errors.Is(err, journal.ErrTrimmed) || errors.Is(err, vfs.ErrNotExist)
}

func newFollower(fs vfs.FS, dir string, after, durable uint64) (*Follower, error) {
	oldest, kept, err := oldestReadable(fs, dir)
	if err != nil {
		return nil, err
	}
	if after+1 < oldest {
		return nil, &journal.TrimmedError{Want: after + 1, Oldest: oldest}
	}
	snapLSN, state, err := journal.LoadSnapshotSections(fs, dir, after, withoutCatalog)
	if err != nil {
		return nil, err
	}
	state.SetRetention(inventory.ReplayRetentionMS)
	r, err := journal.NewReader(fs, dir, snapLSN+1)
	if err != nil {
		return nil, err
	}
	f := &Follower{state: state, reader: r, dec: inventory.NewFollowDecoder(), pos: snapLSN}
	if snapLSN+1 < kept {
		f.kept = kept
	}
	for f.pos < after {
		ok, err := f.step(max(after, durable), nil)
		if err != nil {
			f.Close()
			return nil, f.below(err)
		}
		if !ok {
			f.Close()
			return nil, fmt.Errorf("changes: the journal in %s ends at seq %d, before the cursor %d", dir, f.pos, after)
		}
	}
	return f, nil
}

// Pos returns the seq of the last event the follower passed: the cursor
// of its next read.
func (f *Follower) Pos() uint64 { return f.pos }

// State returns the follower's state machine, as of Pos. Callers must not
// change it.
func (f *Follower) State() *inventory.State { return f.state }

// Next returns the event after Pos if its op is durable (seq <= limit),
// or false when there is none yet.
func (f *Follower) Next(limit uint64) (Event, bool, error) {
	var ev Event
	ok, err := f.step(limit, &ev)
	return ev, ok, f.below(err)
}

// below returns err, or, for a follower that has not yet reached the
// history journal.Oldest vouches for (kept), a *journal.TrimmedError
// naming it: the ops before it are read on trust (oldestReadable), and a
// break in them is history the journal does not keep, not damage.
func (f *Follower) below(err error) error {
	if err == nil || f.kept == 0 || f.pos+1 >= f.kept || errors.Is(err, journal.ErrTrimmed) {
		return err
	}
	return &journal.TrimmedError{Want: f.pos + 1, Oldest: f.kept}
}

// step applies the next op if it is at or below limit, and fills ev (when
// not nil) with its event.
func (f *Follower) step(limit uint64, ev *Event) (bool, error) {
	var lsn uint64
	for {
		for f.left == 0 {
			fr, ok, err := f.reader.Next(limit)
			if err != nil || !ok {
				return false, err
			}
			f.dec.Reset(fr.Payload)
			f.dec.Version = fr.Version
			f.frameLSN, f.frameCount, f.frameStamp, f.left = fr.FirstLSN, fr.Count, fr.Stamp, fr.Count
			f.state.SetTime(fr.Stamp)
			// Frees finished holds and keys past retention; no answer
			// depends on when it runs.
			f.state.Collect()
		}
		lsn = f.frameLSN + uint64(f.frameCount-f.left)
		if lsn > limit {
			return false, nil
		}
		if err := f.dec.Op(&f.op); err != nil {
			return false, fmt.Errorf("changes: decode op %d: %w", lsn, err)
		}
		f.left--
		if lsn > f.pos {
			break
		}
		// The start of a frame that began before the cursor.
		if err := f.apply(lsn); err != nil {
			return false, err
		}
	}
	if ev == nil {
		if err := f.apply(lsn); err != nil {
			return false, err
		}
		f.pos = lsn
		return true, nil
	}
	op := &f.op
	f.touched = f.state.Touched(op, f.touched[:0])
	f.before = f.before[:0]
	for _, k := range f.touched {
		c, ok := f.state.Count(k)
		f.before = append(f.before, rowBefore{c, ok})
	}
	if err := f.apply(lsn); err != nil {
		return false, err
	}
	f.pos = lsn
	*ev = Event{Seq: lsn, TimeMS: f.frameStamp, Op: op.Kind.String(), Key: op.IdempotencyKey, Rows: make([]Row, 0, len(f.touched))}
	switch op.Kind {
	case inventory.KindHold, inventory.KindConfirm, inventory.KindCancel, inventory.KindExpire:
		ev.Hold = op.Hold
	case inventory.KindCatalogSet:
		ev.SKU = op.Record.SKU
	case inventory.KindCatalogDel:
		ev.SKU = op.Key.SKU
	}
	for i, k := range f.touched {
		after, _ := f.state.Count(k)
		delta := after - f.before[i].count
		if delta == 0 && op.Kind != inventory.KindStock {
			continue
		}
		ev.Rows = append(ev.Rows, Row{SKU: k.SKU, Warehouse: k.Warehouse, Condition: k.Condition, Source: k.Source, Delta: delta, CountAfter: after})
	}
	return true, nil
}

func (f *Follower) apply(lsn uint64) error {
	if catalogOp(f.op.Kind) {
		return nil
	}
	res := f.state.Apply(&f.op, f.lines)
	if res.Lines != nil {
		f.lines = res.Lines
	}
	if !res.Changed {
		return fmt.Errorf("%w: op %d (%s): %s %s", ErrNotReplayed, lsn, f.op.Kind, res.Code, res.Detail)
	}
	return nil
}

// A follower keeps no catalog. A catalog event is its op, key, SKU and
// seq alone (no rows, no record), and only ops that changed the engine's
// state are journaled, so nothing a follower derives depends on the records;
// keeping them would cost every follower (a Feed keeps several, and each
// cursor of a new reader builds one) a copy of the whole catalog and its
// index: 150 MB and most of a second per follower at 300,000 records.
func catalogOp(k inventory.Kind) bool {
	return k == inventory.KindCatalogSet || k == inventory.KindCatalogDel
}

func withoutCatalog(tag byte) bool { return tag != inventory.SectionCatalog }

// Close releases the follower's open segment.
func (f *Follower) Close() error { return f.reader.Close() }
