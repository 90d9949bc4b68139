// Package journal is allot's durable log: an append-only command log of the
// ops that changed state, in checksummed frames spread over segment files,
// plus snapshots of the whole state so that recovery does not replay
// history from the beginning.
//
// On disk, in one directory:
//
//	journal-<first LSN, 20 digits>.log   segments of frames
//	snapshot-<LSN, 20 digits>.snap       the state after op LSN
//
// A segment starts with a 16-byte header recording whether its frames were
// acknowledged before they were synced (segment.go); frames follow it.
// A segment of an earlier release has no header and is read as synced.
//
// A frame is one batch of ops, written with one write call:
//
//	magic u32 | payload length u32 | crc32c u32 | first LSN u64 | op count u32 | payload
//
// The CRC (Castagnoli) covers everything after itself. Every op has a log
// sequence number (LSN), starting at 1, with no gaps across frames and
// segments.
//
// Recovery = the newest snapshot + a replay of every later frame, through
// inventory.State.Apply; every replayed op must apply with CodeOK, and the
// state's invariants are checked after replay. A torn or corrupt frame at the
// tail of the last segment (nothing valid after it) is what a crash leaves:
// it is cut and logged. In a segment written unsynced (the engine's write
// and none modes) a bad frame anywhere is what a power cut leaves, pages
// written back in any order: the segment is cut there and the unsynced
// segments after it are removed. In a synced segment, a bad frame with a
// valid frame after it, a bad frame in an older segment, a gap in LSNs or a
// corrupt snapshot is corruption of acknowledged data: Open refuses with a
// *CorruptionError naming the file and offset, and never drops it silently.
// The same goes, in a segment of either kind, for ops that repeat (a
// segment or a frame that does not start where the one before it ended),
// and for a gap after an unsynced segment wider than the zeros at its end
// could have held (a missing segment, not a lost tail). Recovery syncs
// every segment it keeps before it appends, writing the frames of the last
// two again first (a failed fdatasync leaves its pages clean in the page
// cache, not on disk, where a plain sync would not write them): ops
// acknowledged from then on build on the frames it replayed. A cluster
// node's journal (Options.Replica) is a copy of the shard's log: damage in
// its last segment is cut as a hole, and the node takes the rest from the
// log again.
//
// Concurrency: see the Journal type. The journal never reads a clock and
// never decides when to write or sync: the engine does, by durability mode.
//
// The journal talks to disk only through vfs.FS.
package journal
