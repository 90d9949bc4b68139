package changes

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"allot/journal"
	"allot/vfs"
)

// Source is what a Feed needs from the engine (engine.Engine implements
// it).
type Source interface {
	// Dir and FS locate the journal.
	Dir() string
	FS() vfs.FS
	// DurableLSN is the last seq a follower may read.
	DurableLSN() uint64
	// WaitDurable returns once DurableLSN is past after, ctx is done or
	// the engine closes, with the durable LSN then.
	WaitDurable(ctx context.Context, after uint64) uint64
	// SnapshotLSN is the newest snapshot's LSN: the journal keeps no op
	// up to it, and a cursor before it is trimmed, recent events or not.
	SnapshotLSN() uint64
}

// Limits of a read, part of the wire contract.
const (
	CountDefault = 100
	CountMax     = 10000
	BlockMax     = 60 * time.Second
)

// idleFollowersMax bounds the followers a Feed keeps between reads. Each
// holds a copy of the inventory, so the bound is small; a reader whose
// follower was dropped pays a rebuild (snapshot + replay) on its next read.
const idleFollowersMax = 8

// Bounds of the recent events a Feed keeps, so that readers at the same
// cursor near the newest seq (consumers following live, woken together by
// one commit) share what one of them read rather than each take or build
// a follower: a follower is the reader of one cursor, and a Feed keeps one
// per cursor.
const (
	recentEventsMax = 4096
	recentRowsMax   = 1 << 16
)

// Feed serves reads of the change stream. A read at cursor c is served
// from the recent events when they hold c+1, else by an idle follower
// that stopped at c (a consumer reading batch after batch) or by a new
// one; the events a follower reads join the recent events.
//
// Its methods are safe for concurrent use.
type Feed struct {
	src Source

	mu         sync.Mutex
	idle       []*Follower   // most recently used last
	recent     []Event       // gapless, oldest first, all durable
	recentRows int           // rows of the recent events
	tail       chan struct{} // closed when the read after tailCursor is done
	tailCursor uint64
	built      atomic.Uint64
}

// FollowersBuilt is how many followers the feed built (each a copy of the
// inventory, rebuilt from a snapshot and the journal).
func (f *Feed) FollowersBuilt() uint64 { return f.built.Load() }

// NewFeed returns a feed over src.
func NewFeed(src Source) *Feed { return &Feed{src: src} }

// FutureError is returned for a cursor past the newest durable seq.
type FutureError struct {
	After, Newest uint64
}

func (e *FutureError) Error() string {
	return fmt.Sprintf("after %d is past the newest seq %d", e.After, e.Newest)
}

// Read returns up to count events after seq after, oldest first (count
// is taken into 1..CountMax, the contract's bounds: the events of one read
// are held in memory at once). When
// none is newer it waits up to block for the first one, and returns none
// if the wait ends first (or ctx is done). Errors: a *journal.TrimmedError
// for a cursor older than the journal keeps, a *FutureError for one past
// the newest seq.
//
// The events returned share their rows with the feed's recent events and
// other readers': callers must not change them.
func (f *Feed) Read(ctx context.Context, after uint64, count int, block time.Duration) ([]Event, error) {
	return f.read(ctx, after, count, block, nil)
}

// Reader is a consumer that reads on and on (an SSE stream). Unlike
// Feed.Read, it keeps the follower it reads through while it is behind
// the recent events, where the feed's idle followers are shared by every
// reader and the least recently used is dropped; once it reads the recent
// events it gives the follower back to the feed.
type Reader struct {
	feed *Feed
	fol  *Follower
}

// NewReader returns a reader of the feed. Close it when done.
func (f *Feed) NewReader() *Reader { return &Reader{feed: f} }

// Read is Feed.Read for this reader.
func (r *Reader) Read(ctx context.Context, after uint64, count int, block time.Duration) ([]Event, error) {
	return r.feed.read(ctx, after, count, block, &r.fol)
}

// Close gives the reader's follower, if it holds one, back to the feed.
func (r *Reader) Close() {
	if r.fol != nil {
		r.feed.Put(r.fol)
		r.fol = nil
	}
}

// read is Read; held, when not nil, is the follower a Reader holds
// between reads (nil if none).
func (f *Feed) read(ctx context.Context, after uint64, count int, block time.Duration, held **Follower) ([]Event, error) {
	durable := f.src.DurableLSN()
	if after > durable {
		return nil, &FutureError{After: after, Newest: durable}
	}
	if after == durable && block > 0 {
		wctx, cancel := context.WithTimeout(ctx, block)
		durable = f.src.WaitDurable(wctx, after)
		cancel()
	}
	if after == durable {
		return []Event{}, nil
	}
	// A count past CountMax (or below 1, which as a uint64 is past it)
	// made one read hold every event up to the newest, however many.
	want := min(uint64(min(max(count, 1), CountMax)), durable-after)
	events := make([]Event, 0, want)
	// A cursor the journal no longer keeps is refused as trimmed (by the
	// follower), though the recent events may still hold what follows it.
	recent := after >= f.src.SnapshotLSN()
	for {
		if recent {
			events = f.fromRecent(events[:0], after, after+want)
		}
		if uint64(len(events)) == want {
			if held != nil && *held != nil {
				f.Put(*held)
				*held = nil
			}
			return events, nil
		}
		cursor := after + uint64(len(events))
		var wait chan struct{}
		var lead bool
		if recent {
			wait, lead = f.tailTurn(cursor)
		}
		if wait != nil {
			// Another reader is reading on from the newest recent
			// event: this one reads what it remembers.
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return events, nil
			}
		}
		events, err := f.readFollower(events, cursor, after+want, durable, held)
		if lead {
			f.tailDone()
		}
		return events, err
	}
}

// tailTurn is called by a read that needs the events after cursor, which
// the recent events do not hold. When cursor is the newest recent event
// (or there is none), every reader that follows live needs what comes
// next: the first to ask reads it (lead), the others wait for wait to be
// closed and read it from the recent events.
func (f *Feed) tailTurn(cursor uint64) (wait chan struct{}, lead bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := len(f.recent)
	if n > 0 && f.recent[0].Seq <= cursor+1 && cursor < f.recent[n-1].Seq {
		// The reader that led since the caller looked has added them.
		return closedChan, false
	}
	if n > 0 && f.recent[n-1].Seq != cursor {
		return nil, false
	}
	if f.tail != nil {
		if f.tailCursor == cursor {
			return f.tail, false
		}
		return nil, false
	}
	f.tail, f.tailCursor = make(chan struct{}), cursor
	return nil, true
}

// closedChan is a closed channel: tailTurn's "read the recent events
// again".
var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

func (f *Feed) tailDone() {
	f.mu.Lock()
	defer f.mu.Unlock()
	close(f.tail)
	f.tail = nil
}

// readFollower appends to events those after cursor up to seq last
// through a follower: the one held (see read) if it stopped at cursor, an
// idle one or a new one. The follower is held on if held is not nil and
// it did not reach durable, else given back to the feed.
func (f *Feed) readFollower(events []Event, cursor, last, durable uint64, held **Follower) ([]Event, error) {
	var fol *Follower
	if held != nil && *held != nil {
		if fol, *held = *held, nil; fol.Pos() != cursor {
			f.Put(fol)
			fol = nil
		}
	}
	if fol == nil {
		var err error
		if fol, err = f.Take(cursor, durable); err != nil {
			if len(events) > 0 && errors.Is(err, journal.ErrTrimmed) {
				return events, nil
			}
			return nil, err
		}
	}
	read := len(events)
	for fol.Pos() < last {
		ev, ok, err := fol.Next(durable)
		if err != nil {
			fol.Close()
			f.remember(events[read:])
			if len(events) > 0 && errors.Is(err, journal.ErrTrimmed) {
				// Left behind by a snapshot (the segment it needs next
				// was removed): what was read is the reader's; its next
				// read is refused with the oldest seq then.
				return events, nil
			}
			return nil, err
		}
		if !ok {
			break
		}
		events = append(events, ev)
	}
	if held != nil && fol.Pos() < durable {
		*held = fol
	} else {
		f.Put(fol)
	}
	f.remember(events[read:])
	return events, nil
}

// fromRecent appends to events the recent events after seq after, up to
// seq last, if the recent events hold the one right after after.
func (f *Feed) fromRecent(events []Event, after, last uint64) []Event {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.recent) == 0 || after+1 < f.recent[0].Seq {
		return events
	}
	i := after + 1 - f.recent[0].Seq
	if i >= uint64(len(f.recent)) {
		return events
	}
	j := min(uint64(len(f.recent)), last+1-f.recent[0].Seq)
	return append(events, f.recent[i:j]...)
}

// remember adds events a follower read (gapless, oldest first) to the
// recent events: those that continue them, or all of them in their place
// when they are newer than the recent events' last; older ones are left.
// The oldest recent events are dropped beyond the bounds.
func (f *Feed) remember(events []Event) {
	if len(events) == 0 {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	next := uint64(0) // the seq that continues the recent events
	if n := len(f.recent); n > 0 {
		next = f.recent[n-1].Seq + 1
	}
	switch {
	case next == 0 || events[0].Seq > next:
		clear(f.recent)
		f.recent, f.recentRows = f.recent[:0], 0
	case events[len(events)-1].Seq < next:
		return
	default:
		events = events[next-events[0].Seq:]
	}
	for i := range events {
		f.recent = append(f.recent, events[i])
		f.recentRows += len(events[i].Rows)
	}
	drop := 0
	for len(f.recent)-drop > recentEventsMax || (f.recentRows > recentRowsMax && len(f.recent)-drop > 1) {
		f.recentRows -= len(f.recent[drop].Rows)
		drop++
	}
	if drop > 0 {
		clear(f.recent[:drop])
		f.recent = f.recent[drop:]
	}
}

// Take returns a follower at cursor after (durable: the durable LSN, at
// least after): an idle one, or a new one. Give it back with Put, or Close
// it.
func (f *Feed) Take(after, durable uint64) (*Follower, error) {
	f.mu.Lock()
	for i := len(f.idle) - 1; i >= 0; i-- {
		if fol := f.idle[i]; fol.Pos() == after {
			f.idle = append(f.idle[:i], f.idle[i+1:]...)
			f.mu.Unlock()
			return fol, nil
		}
	}
	f.mu.Unlock()
	f.built.Add(1)
	return NewFollower(f.src.FS(), f.src.Dir(), after, durable)
}

// Put keeps fol for a later read at its cursor, dropping the least
// recently used follower beyond the bound (or one already at that cursor).
func (f *Feed) Put(fol *Follower) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, o := range f.idle {
		if o.Pos() == fol.Pos() {
			o.Close()
			f.idle = append(f.idle[:i], f.idle[i+1:]...)
			break
		}
	}
	if len(f.idle) >= idleFollowersMax {
		f.idle[0].Close()
		f.idle = f.idle[1:]
	}
	f.idle = append(f.idle, fol)
}

// Close drops the idle followers.
func (f *Feed) Close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, o := range f.idle {
		o.Close()
	}
	f.idle = nil
}
