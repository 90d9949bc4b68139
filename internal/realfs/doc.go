// Package realfs tests the engine against faults of a real file system,
// where the in-memory fault injection of vfs cannot reach: a disk that
// fills (RLIMIT_FSIZE on a child process: every file past the limit fails
// with EFBIG, as a full disk fails with ENOSPC), a data directory made
// read-only, and a data directory deleted under a running engine.
//
// Each scenario runs the engine in a child process (this test binary run
// again as a helper), so that a resource limit, a changed user or a crash
// stays in that child. The child stocks rows one per op, printing each op
// it got an acknowledgement for; the test then checks the promises: the
// fault surfaced as a clear error naming what failed; the engine stopped
// (every later op refused with engine.ErrUnavailable, none acknowledged);
// once the cause is gone the data directory opens cleanly and holds every
// acknowledged op.
//
// It holds tests only; nothing imports it.
package realfs
