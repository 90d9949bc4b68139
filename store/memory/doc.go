// Package memory is the bench store "memory": inventory.State behind one
// sync.Mutex, in the bench's own process.
//
// It is the harness-overhead baseline: no journal, no pipeline, no network,
// so its ops/s is about the most the bench's runner can drive on this
// machine, and every other store is read against it.
//
// Invariants: every operation holds the mutex for its whole apply, so the
// state machine's guarantees (all or nothing, no count below zero) hold for
// any number of sessions. What it must never do: allocate on the capture or
// release path (it would then measure the allocator, not the harness), or
// keep a caller's lines buffer after a call returns.
package memory
