// Package engine is allot's reservation engine: the inventory state
// machine fed by a journal, behind a batching pipeline, with an embedded Go
// API.
//
// The pipeline: callers Submit requests to a bounded queue (a full queue
// blocks the caller: back-pressure, never a drop). One writer goroutine
// takes up to BatchMax queued requests at a time, applies them in order to
// the state machine, adds the ops that changed state to the journal's
// pending frame, and writes the frame with one write call. Then, by mode:
//
//   - fsync (default): the batch goes to a syncer goroutine, which calls
//     fdatasync once for everything written so far and then releases every
//     reply it covers. While it syncs, the writer goes on applying and
//     writing the next batches, so one fdatasync covers thousands of ops.
//   - write: replies are released as soon as the frame has been written to
//     the operating system (survives a process crash, not power loss).
//   - none: replies are released after apply; frames are written in large
//     chunks (or when the queue runs dry) and synced only on Close.
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
