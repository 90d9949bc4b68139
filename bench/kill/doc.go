// Package kill is the kill -9 audit behind `allot bench --kill N`: it runs
// captures and releases against a real server, crashes the server process
// with SIGKILL at a random moment under load, starts it again on the same
// data, reads every row back and counts what the crash did to the ops:
//
//   - acknowledged ops lost: the store said done, the restarted server
//     does not have it (a failure under fsync and under write, whose
//     promise a process crash is within; under none it is what the mode
//     costs);
//   - ops applied though never acknowledged: in flight at the kill, the
//     client saw an error, the server had applied it (fine: the client was
//     told the outcome is unknown);
//   - half-applied captures: some of a capture's rows taken, not all
//     (never fine);
//   - oversold: a row below zero, or more taken from a group than it held;
//   - rows missing: loaded rows the restarted server does not have (Load
//     is a write the store acknowledged: a failure under fsync and write,
//     as a lost op is).
//
// An audit whose every kill came after the workers had sent all their ops
// crashed an idle server and proves little: it does not pass
// (Result.NotUnderLoad).
//
// How it can tell, exactly, op by op. Each worker owns its groups and rows;
// no other worker touches them, and a worker sends one op at a time, so the
// ops on any one group or row form a sequence whose order the worker knows,
// with at most one op (the one in flight at the kill) of unknown fate.
// Captures only ever take from a group and releases only ever add to a row,
// so every prefix of a sequence leaves a different total: the total read
// back names exactly how many of the sequence's ops the server kept. A
// total between two prefixes is a capture half applied; rows that do not
// match the allocation rule for their prefix are corrupt. A server that
// loses the tail of its history keeps a prefix of each sequence; one that
// loses ops out of order shows up as a mismatch.
//
// The contention workload is not what this measures (the bench does); the
// audit sizes its rows so that captures often span two warehouses, where a
// store without atomic multi-row writes would leave half a capture.
//
// Invariants: the audit never kills a process itself; Server does, and
// cmd/allot implements it for allot serve (store/remote) and for the peer
// servers (services.Kill and services.Up). It must never count an op whose
// fate it cannot know as lost: an op in flight at the kill is judged only by
// what was read back.
package kill
