// Package bench runs the reservation workload against a store.Store,
// measures it, and checks that no unit was oversold.
//
// A run loads the workload's initial rows into the store, then replays its
// ops: closed loop (T workers each take the next op of the shared sequence
// as soon as their previous one returns) or open loop (ops are issued on a
// fixed schedule and latency is counted from each op's intended start, so a
// stalled store cannot hide its queueing delay). Every store call is timed
// into a per-worker HDR histogram; the histograms are merged at the end.
// After the ops, the store's rows are read back and Check compares them with
// what the recorded outcomes imply.
//
// Invariants:
//   - every op of the workload is issued exactly once (its retries aside);
//   - a capture that finds too little stock is retried after RetryDelay, up
//     to RetryMax times, because concurrency may have reordered it after the
//     release it depends on; the retries are counted, never hidden;
//   - an error from a Session is counted as an error, never retried;
//   - the per-op path allocates nothing on an in-memory store, so that the
//     "memory" store measures the harness and nothing else.
//
// What bench must never do: know about an adapter by name (it sees only the
// store package's interfaces and registry), keep metrics inside adapters, or
// report a run whose check failed as anything but failed.
package bench
