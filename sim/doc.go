// Package sim is allot's deterministic simulator: one seed decides the
// workload, the simulated clock (which steps back, up to 2 s, and
// forward, up to 5 s, after one window in eight, as NTP steps a wall
// clock, and may come back up to 2 s behind after a power cut), the order
// in which each window of
// concurrent requests is submitted, how often snapshots are taken (every
// 150, 400 or 1,500 ops), the storage faults (EIO and ENOSPC on
// file creates, opens, reads, writes, syncs, directory syncs, renames,
// removes, truncates, maps and unmaps), the crash and restart points, and
// the retention window each restart opens the engine with (60 ms to 24 h:
// an operator may shorten or lengthen it, and recovery must replay ops
// that ran under another window; the model applies each op under the one
// it ran with; once a snapshot was written a restart does not lengthen
// it, see snapshotWritten).
//
// The workload has every op kind the engine has: stock sets, captures,
// releases, holds with a time to live, confirms, cancels, orders and hold
// reads; a quarter of the keyed ops carry an idempotency key from a small
// pool, and some repeat an earlier keyed op (the first reply again) or
// reuse its key with other arguments (a mismatch). Holds expire by the
// simulated clock: in the first batch at or past their deadline, and in
// the writer's tick, which the simulator runs with no request. In fsync
// runs the clock also moves between the requests of a window (one time
// in six, up to 120 ms), as it does while a flush's fdatasync runs: a
// request that finds the open frame stamped 50 ms or more behind the
// clock with a hold due begins a frame of its own, the open one closed
// aside (engine.cutLocked), and the model does the same (Result.Cuts).
//
// The engine runs on an in-memory file system that models the page cache
// page by page (vfs.Mem): write and none modes map their segments (three
// seeds in four; the others take the write(2) path, where frame writes
// fail and tear), and a write through the mapping is unsynced page cache,
// as on a real disk. A failed fdatasync leaves the pages it did not write
// readable but clean, never written by a later sync, as Linux does
// (vfs.SyncFailer). Directory entries are durable only once their
// directory is synced, and so is a directory's own name: a data directory
// the engine makes is lost, with all in it, by a power cut before its
// parent is synced. A failed directory sync leaves the directory's state
// unknown (faultfs.go, machine): the entry changes since its last good
// sync all reached the disk or none did, drawn at the failure, and no
// later sync changes that, whatever it reports; the file system must be
// remounted, so the next crash is a power cut, and a recovery that failed
// on it runs again only after one. A power cut keeps a seed-chosen subset
// of every file's unsynced 4 KiB pages, each whole, torn or lost, in no
// order (unordered writeback), and each directory's entries as of its last
// sync. A process crash keeps the page cache and the entries as they are,
// still unsynced (vfs.Mem.CrashProcess): a power cut later in the run
// loses what the restarted process did not make durable. In fsync and none
// runs a crash is a power cut two times in three, else a crash of the
// process; in write runs a crash of the process, and one time in three a
// power cut, which write mode does not promise to survive but must recover
// from. In write and none runs every full segment (the one a process
// created, or a spare renamed into place: faultFS follows a handle through
// a rename) is synced on the journal's goroutine, and the seed places that
// sync against the crash: before a crash of the process it ran, or (half
// the time) the process died first and left the segment in the page cache
// only, for the next recovery to make durable (faultFS.retiring). In fsync
// runs the process may also die in an fdatasync of a segment, between the
// write of a frame and its sync (the one point of that mode where the page
// cache holds more than the disk), faults on or off: of any segment, the
// one a process created or a spare renamed into place (the kills go by
// where a handle's file is now, not by the name it was opened under,
// segment.spare). With faults on, the process also dies at a step of
// writing a snapshot (each call on its file, the rename, the directory
// sync), of retiring segments (removing those a snapshot covers, the
// directory sync after; in write and none modes the sync and unmap of a
// full segment, a renamed spare included), and at any rename, remove or
// directory sync (Config.StepKillRate), and the machine goes down with it
// as often as at other crashes. Half the crashes come in the middle of a window, with
// replies outstanding.
//
// After every recovery the simulator checks the promises, against a
// reference model (inventory.State, the same pure state machine, fed the
// same ops in the same order at the same times, with the same expiries):
//
//   - recovery never refuses the data as corrupt;
//   - the recovered state (rows and every hold) equals the model after a
//     prefix of the ops that changed state: nothing reordered, nothing
//     invented;
//   - under fsync, every acknowledged op lies inside that prefix (a power
//     cut loses none); under write, the same after a process crash;
//   - in every mode, the prefix holds at least every op the previous
//     recovery replayed: recovery makes them durable before it appends;
//   - every acknowledged reply equals the model's reply;
//   - every op the recovered journal holds carries, as its time stamp
//     (an event's time_ms), the time the model applied it at: the
//     engine's own time, which never goes back whatever the clock did
//     (under write and none, the ops recovery replayed; the history
//     before the newest snapshot is not promised past a power cut);
//   - the engine recovers at a time no earlier than its last op's and no
//     later than any it ran at;
//   - under write and none, the history before the newest snapshot (kept
//     for change-stream readers) that a recovery found readable is still
//     readable after the next crash, power cuts included: recovery syncs
//     every segment it keeps;
//   - the model's ops keep the rules of time (checkTime, an oracle apart
//     from the state machine the model shares with the engine): times
//     never decrease; a hold expires at or after its deadline, earliest
//     deadline first, once; no op is applied while a hold is held past
//     its deadline; no confirm or cancel takes a hold past it;
//   - no op was acknowledged that was submitted after the engine reported
//     a journal error, or during whose Submit the journal failed
//     (fail-stop).
//
// A failing run prints its seed and the command that replays it.
//
// Determinism: the seed fixes the ops, their submission order, the clock,
// where frames end (the engine runs with Config.ManualFlush, and the
// simulator flushes after seed-chosen requests), the crash points, the
// pages a power cut keeps (hashed from the seed, the file and the page)
// and the fault decisions (the n-th call of a kind on a file is decided by
// the seed, the kind, the name the file was opened under and n); the
// deaths in an fdatasync and at a step likewise, by the name the file has
// at the call (a renamed spare's, the segment's) instead.
// Not fixed: the engine's background goroutines (the spare segment's
// preallocation, snapshots) run when the scheduler lets them, so whether
// one of them finished before a crash, and with it what survives, can vary
// between runs of one seed. The background sync of a full segment does
// not: it reaches the disk where the seed places it (above), at the latest
// when the journal's writer goes on past it, and before a power cut if the
// journal called it. With faults off, a seed's counts (acknowledged ops,
// crashes) repeat from run to run; with faults on they may differ a
// little. A replay reproduces the workload, the frames, the fault schedule
// and the crash points; with faults on, the crashes at the steps of the
// background goroutines vary between runs as their faults do.
//
// Its power is tested (sim_test.go, power_audit11_test.go): each
// deliberately broken component is caught within 1,000 seeds — an
// fdatasync that lies (acknowledging before the data is synced), a disk
// that loses synced bytes, a journal that appends a frame only after its
// ops were acknowledged (apply before append: journal.BrokenLateAppend), a
// recovery that does not cut a torn tail or hole
// (journal.BrokenKeepTornTail), a new segment whose name is never synced
// into its directory (journal.BrokenSegmentNameNotSynced), a recovery
// that does not write again (journal.BrokenNoRecoveryRewrite) or does not
// sync (journal.BrokenNoRecoverySync) the frames it replayed, an engine
// that stamps batches with a clock that went back
// (journal.BrokenStampRawClock), a snapshot written in place rather than
// renamed into it (journal.BrokenSnapshotInPlace), a directory sync
// retried after it failed (journal.BrokenRetryDirSync) and a data
// directory whose parent is never synced
// (journal.BrokenDataDirNameNotSynced) (clock_audit13_test.go,
// crashpoints_audit13_test.go, dirsync_audit13_test.go), a recovery
// that does not sync the history segments (journal.BrokenNoHistorySync,
// at the first of seven fixed seeds, with eight snapshots kept:
// history_audit16_test.go), and a model that never closes a frame aside
// (cut_audit16_test.go).
package sim
