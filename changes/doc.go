// Package changes is allot's change stream: every committed mutation as an
// event, in journal order, with a gapless sequence number (seq = the op's
// LSN in the journal, 1 for the first mutation a data directory ever
// applied).
//
// Events come from the journal, never from a second write path. A
// Follower reads the journal's frames as they become durable
// (journal.Reader), replays them onto a state machine of its own, starting
// from the snapshot at or before its cursor (or from the beginning), and
// derives each event's rows by reading the counts of the rows the op may
// touch (inventory.State.Touched) before and after it applies. The
// journaled op alone does not say what a capture took, nor what an expiry
// gave back: the state machine does, the same way on replay as live.
//
// Invariants:
//   - seq is gapless and increasing: a follower emits exactly one event per
//     journaled op, and fails (never skips) when an op does not replay.
//   - a follower never reads past the LSN its Source says is durable, so an
//     event is never visible before the mutation is as durable as the
//     engine's mode promises.
//   - a cursor older than the journal keeps is refused with a
//     *journal.TrimmedError naming the oldest readable seq, never served
//     from a partial state.
//
// The JSON of an event is the wire contract (DESIGN.md, "Change stream"):
//
//	{"seq":7,"time_ms":1700000000000,"op":"capture","key":"k1",
//	 "rows":[{"sku":"s","warehouse":"w1","condition":"new","source":"a","delta":-2,"count_after":3}]}
//
// What it must never do: write to the data directory, or take its lock.
package changes
