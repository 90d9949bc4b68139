package engine

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"allot/journal"
	"allot/vfs"
)

// What a follower of the journal (the change stream, a replica) needs from
// the engine: where the journal is, how far it is durable, and a way to
// wait until it is durable further. The follower reads the journal's files
// itself (journal.Reader): events come from what was journaled, never from
// a second write path.

// durableFeed publishes the LSN of the last op whose frame is as durable as
// the engine's mode promises: written (write and none modes) or written and
// synced (fsync mode). Its zero value is ready; the engine's recovered LSN
// is the floor (see DurableLSN).
//
// Waiters park on a channel that is closed and replaced at each publish: a
// broadcast that costs the writer one lock and one close when someone waits
// and one atomic store otherwise. A sync.Cond was the alternative; it cannot
// be combined with a context or a timeout.
type durableFeed struct {
	lsn     atomic.Uint64
	waiting atomic.Bool
	mu      sync.Mutex
	ch      chan struct{} // closed at the next publish; nil when nobody waits
}

// published records that frame (as journal.Seal returned it) is durable.
// The engine calls it after the write (write, none) or the fdatasync
// (fsync) that made it so.
func (e *Engine) published(frame []byte) {
	if len(frame) == 0 {
		return
	}
	f := &e.durable
	f.lsn.Store(journal.FrameLastLSN(frame))
	if !f.waiting.Load() {
		return
	}
	f.mu.Lock()
	if f.ch != nil {
		close(f.ch)
		f.ch = nil
	}
	f.waiting.Store(false)
	f.mu.Unlock()
}

// DurableLSN returns the LSN of the last op that is as durable as the
// engine's mode promises: a follower may read the journal up to it. 0 for a
// data directory that never applied a mutation.
func (e *Engine) DurableLSN() uint64 {
	return max(e.durable.lsn.Load(), e.recovery.LastLSN)
}

// SnapshotLSN returns the LSN of the newest snapshot written (0: none):
// the journal no longer keeps the ops up to it, and a change stream
// cursor before it is trimmed (journal.Oldest).
func (e *Engine) SnapshotLSN() uint64 { return e.snapshotLSN.Load() }

// WaitDurable returns as soon as DurableLSN is past after, or when ctx is
// done, or when the engine closes; it returns the durable LSN then.
func (e *Engine) WaitDurable(ctx context.Context, after uint64) uint64 {
	f := &e.durable
	for {
		if lsn := e.DurableLSN(); lsn > after {
			return lsn
		}
		f.mu.Lock()
		if f.ch == nil {
			f.ch = make(chan struct{})
		}
		ch := f.ch
		f.waiting.Store(true)
		f.mu.Unlock()
		// Published between the first load and the registration?
		if lsn := e.DurableLSN(); lsn > after {
			return lsn
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return e.DurableLSN()
		case <-e.stop:
			return e.DurableLSN()
		}
	}
}

// FS returns the file system the journal is on.
func (e *Engine) FS() vfs.FS { return e.cfg.FS }

// Retention returns how long finished holds and idempotency keys are
// remembered: a follower replaying the journal must use the same window,
// or a keyed repeat would replay differently.
func (e *Engine) Retention() time.Duration { return e.cfg.Retention }

// AppliedLSN returns the LSN of the last op applied, durable or not yet.
func (e *Engine) AppliedLSN() uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.journal.NextLSN() - 1
}
