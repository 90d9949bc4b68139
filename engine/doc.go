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
// Time. The engine reads its clock (Config.Clock, injectable) only to stamp
// batches: the first op of a journal frame sets the frame's stamp
// (milliseconds, never decreasing), the state machine's time is set to it,
// and every op of the frame is applied at that time. Before the frame's
// ops, the writer expires the holds due by the stamp, at most 4096 per
// batch, each as a journaled Expire op: replay reproduces the same expiries
// at the same points and never consults the clock. When no request comes,
// a ticker runs a batch every TickInterval (10 ms) and back to back while
// more holds are due; a simulation sets TickInterval negative and calls
// Tick itself. A confirm or cancel of a hold past its deadline that no
// batch expired yet is preceded by its Expire op.
//
// Outcome classes. Every operational error wraps ErrUnavailable (refused
// before it was applied: closed, or stopped after a journal failure) or
// ErrOutcomeUnknown (applied in memory, but its frame's write or sync
// failed: it may or may not survive a restart). In a batch whose journal
// failed only the ops that changed state get ErrOutcomeUnknown; reads and
// ops that changed nothing applied nothing and get ErrUnavailable.
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
