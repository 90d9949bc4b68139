// Package engine is allot's reservation engine: the inventory state
// machine fed by a journal, behind a batching pipeline, with an embedded Go
// API.
//
// The pipeline: a caller's Submit validates the op, then, under the
// engine's lock, applies it to the state machine and adds it (if it changed
// state) to the journal's pending frame: apply order is journal order is
// Submit order. In fsync and none modes one flusher goroutine seals the
// pending frame, writes it with one write call, and then, by mode:
//
//   - fsync (default): calls fdatasync, then releases every reply the frame
//     covers. While it syncs, new ops pile up and ride on its next write:
//     one fdatasync covers every op that arrived during the previous one.
//   - write: the submitting goroutine itself writes its op's frame to the
//     operating system under the lock (with the journal mapped, a copy into
//     the page cache) and releases its reply at once: survives a process
//     crash, not power loss.
//   - none: replies are released right after apply; frames are written in
//     large chunks, at least every 50 ms, and synced only on Close.
//
// Replies waiting for the disk are bounded by QueueMax: beyond it Submit
// blocks (back-pressure), and nothing is ever dropped.
//
// Every reply, reads included, is released only when everything it observed
// is as durable as the mode promises: a read never reports state that a
// crash could take back under its mode.
//
// Invariants: ops apply in Submit order; an op's outcome is decided by the
// state machine alone; the journal holds exactly the ops that changed state,
// in apply order. If a journal write or sync fails, the engine stops: every
// pending and later request fails with that error, because memory and disk
// no longer agree (retrying an fsync after a failure can report success for
// data that was lost).
//
// The engine must never acknowledge an op before its mode's durability
// point, and never drop a queued request, even on Close.
package engine
