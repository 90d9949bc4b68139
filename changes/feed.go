package changes

import (
	"context"
	"errors"
	"fmt"
	"sync"
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

// Feed serves reads of the change stream. A read at cursor c reuses an
// idle follower that stopped at c (the common case: a consumer reading
// batch after batch) or builds one.
//
// Its methods are safe for concurrent use.
type Feed struct {
	src Source

	mu   sync.Mutex
	idle []*Follower // most recently used last
}

// NewFeed returns a feed over src.
func NewFeed(src Source) *Feed { return &Feed{src: src} }

// FutureError is returned for a cursor past the newest durable seq.
type FutureError struct {
	After, Newest uint64
}

func (e *FutureError) Error() string {
	return fmt.Sprintf("after %d is past the newest seq %d", e.After, e.Newest)
}

// Read returns up to count events after seq after, oldest first. When
// none is newer it waits up to block for the first one, and returns none
// if the wait ends first (or ctx is done). Errors: a *journal.TrimmedError
// for a cursor older than the journal keeps, a *FutureError for one past
// the newest seq.
func (f *Feed) Read(ctx context.Context, after uint64, count int, block time.Duration) ([]Event, error) {
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
	fol, err := f.Take(after, durable)
	if err != nil {
		return nil, err
	}
	events := make([]Event, 0, min(count, int(durable-after)))
	for len(events) < count {
		ev, ok, err := fol.Next(durable)
		if err != nil {
			fol.Close()
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
	f.Put(fol)
	return events, nil
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
