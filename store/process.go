package store

import "context"

// ServerProcess is an optional Store capability: the store's server is a
// process on this machine, and the bench may read its CPU time and memory
// from /proc while a run goes on, to report what each op costs the server.
//
// ServerPID returns the pid of the server's main process: the one whose
// descendants are the rest of the server (PostgreSQL's postmaster, not a
// backend). An error means the pid cannot be known (a server on another
// host, an older server without the means to tell); the bench then reports
// no resource figures for the run rather than wrong ones.
//
// An in-process store (embedded) returns the bench's own pid: its figures
// then include the bench's own work (workers, histograms), which the
// result says (bench.ServerUsage.InProcess).
type ServerProcess interface {
	ServerPID(ctx context.Context) (int, error)
}
