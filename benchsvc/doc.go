// Package benchsvc is `allot bench serve`: the bench as a service. Runs
// are started over HTTP with the bench's own parameters, queued one at a
// time per store, watched live (server-sent events, one sample a second),
// cancelled, and kept as history (on disk with a data directory, so a
// restart keeps them). A web page at / drives it all, and a compatibility
// endpoint answers the seed load-test bench's POST /test/gen-load/{store}.
//
// One code path: a run's JSON parameters are turned into the equivalent
// `allot bench` argument list (Args) and handed to a Parser the command
// supplies, which builds the very same job the command line runs. This
// package never re-implements a bench parameter, so a run started here and
// the same run started from a shell measure the same thing.
//
// Invariants:
//   - at most one run uses a store at a time; queued runs start in the
//     order they came, a run never overtakes an earlier one that wants one
//     of its stores;
//   - a run's record is written to disk (when there is a data directory)
//     whenever its state changes, so a restart loses at most the live
//     progress of the runs in flight, which come back as failed, saying so;
//     the writes go out of the service's lock (no reader of the API waits
//     for an fsync) and in the order of the changes, and a run's end is
//     told (Wait, the stream's end) only once it is on disk;
//   - one service per data directory: New holds a lock file in it until
//     Close, and refuses a directory another service holds;
//   - no request body, however malformed, panics the service (FuzzArgs,
//     FuzzGenLoad): bad input is a 400 saying what was wrong, an unknown
//     store a 404;
//   - no request makes the service hold memory without a bound: the
//     Parser refuses a job past the bounds of a run over HTTP (the
//     command's: ops per workload, workers, in-flight ops, search's
//     sample; a 400 naming the field, the bound and the value), and a
//     gen-load WRITE, which keeps a record per op, is sized at most
//     RecordOpsMax ops (a store faster than that over timeInMilis ends
//     early, and timeMs says so); nor does a long run: its live series
//     keeps a few hundred points (older samples merge, totals kept), and
//     a result's per-second counts an hour (later seconds fold into the
//     last); the history keeps historyMax runs (the oldest finished ones
//     go first, from the start: loading a data directory applies it),
//     and GET /v1/runs answers it a page at a time, at most listLimitMax
//     runs;
//   - a run's events carry its sample number as their id (1, 2, ...): a
//     client reconnecting with Last-Event-ID gets only the samples after
//     it, then the end (or, when that sample has been merged since, a
//     "reset" event and the whole series); a stream whose reader falls
//     more than 8 samples behind the live ones ends, without the end,
//     rather than skip a sample, and its client gets the rest by
//     reconnecting; the end goes only to a client that holds every
//     sample; a stream silent for Config.EventKeepalive (15 s) gets a
//     comment line, so that a proxy does not cut it as idle.
//
// It must never run a request it could not map entirely to bench flags,
// and never accept a flag that names a file on the server (--out,
// --report, --cpuprofile, --ops-file, --data): a client could otherwise
// write or read the server's files.
package benchsvc
