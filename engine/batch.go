package engine

import (
	"allot/inventory"
)

// SubmitBatch submits rs in order, as calls of Submit one after the other
// would, and returns how many it submitted: all of them, or, when the
// engine closed, those before the first it refused (err is then ErrClosed;
// rs[n:] were not submitted). Each submitted request is waited for with
// Wait, by the goroutine that called SubmitBatch or one it handed the
// request to, unless it has a Notify, which is called instead.
//
// What it saves is per-op work a pipeline does not need: one lock, one
// reading of the clock and one journal frame for the batch (write mode
// writes that frame once, after the last op, before any reply goes), and
// no channel operation for a reply released at once. A RESP connection
// submits each round of its pipeline this way. The ops of one batch share
// the frame's time stamp, as ops gathered in one frame always do.
func (e *Engine) SubmitBatch(rs []*Request) (int, error) {
	if len(rs) == 1 {
		if err := e.Submit(rs[0]); err != nil {
			return 0, err
		}
		return 1, nil
	}
	var invalid []*Request // answered at once, outside the lock, as Submit does
	e.mu.Lock()
	if e.standby != nil || e.grouped {
		// A standby or a replicated primary takes its own path per request.
		e.mu.Unlock()
		for i, r := range rs {
			if err := e.Submit(r); err != nil {
				return i, err
			}
		}
		return len(rs), nil
	}
	mode := e.cfg.Durability
	failedBefore := e.failure != nil
	began, kick := false, false
	first := -1 // the first request applied in this batch
	n := 0
	for ; n < len(rs); n++ {
		r := rs[n]
		if d := e.invalid(r); d != "" {
			r.Result, r.Err = inventory.Result{Code: inventory.CodeInvalid, Detail: d}, nil
			invalid = append(invalid, r)
			continue
		}
		for e.mustWaitLocked() {
			e.room.Wait()
			began = false // the lock was let go: the clock moved, others wrote
		}
		if e.closed {
			break
		}
		if !began && e.failure == nil {
			e.beginLocked() // may write a frame an earlier op left open
			e.expireBacklogLocked()
			began = true
			if e.closed {
				break
			}
		}
		if e.failure != nil {
			r.Err = refused(e.failure)
			r.settled = true
			continue
		}
		e.applyLocked(r)
		if first < 0 {
			first = n
		}
		if mode == DurabilityFsync {
			kick = e.enqueueLocked(r) || kick
		} else {
			r.settled = true // released below, after the frame is written
		}
	}
	if mode == DurabilityWrite && first >= 0 && e.failure == nil {
		// The batch's frame goes to the operating system before any of its
		// replies.
		e.writePendingLocked()
	}
	if mode != DurabilityFsync && !failedBefore && e.failure != nil && first >= 0 {
		// The journal failed during this batch (its frame, a frame an
		// earlier op left open, or a full none-mode frame): every op it
		// applied is in memory but maybe not on disk, and none may be
		// acknowledged.
		for _, r := range rs[first:n] {
			if r.settled && r.Err == nil && r.Result.Code != inventory.CodeInvalid {
				r.Err = failedBatch(r, e.failure)
			}
		}
	}
	if mode != DurabilityFsync {
		kick = e.opsSinceSnap >= e.cfg.SnapshotEveryOps
	}
	closed := e.closed && n < len(rs)
	e.unlockKick(kick)
	for _, r := range invalid {
		r.settled = true
	}
	for _, r := range rs[:n] {
		if r.settled && r.Notify != nil {
			r.settled = false
			r.release()
		}
	}
	if closed {
		return n, ErrClosed
	}
	return n, nil
}
