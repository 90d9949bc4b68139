// Package resp is the RESP (Redis protocol) layer of allot serve: a decoder
// that splits a connection's bytes into commands, the table of commands of
// the wire contract with their argument decoding, and the reply encoders.
//
// It is pure: no I/O, no goroutines, no engine. The server owns the socket
// and the buffers; this package only looks at the bytes it is given.
//
// Invariants:
//   - Decoder.Next never reads past the slice it is given and never keeps it;
//     the arguments it returns alias that slice and are valid until the
//     caller reuses the buffer.
//   - Every command is bounded: at most Limits.ArgsMax arguments and
//     Limits.CommandBytesMax bytes of frame. A command that breaks a limit
//     but is well framed is skipped to its end and answered with an error,
//     so the connection stays usable; a frame that cannot be resynchronised
//     (garbage where a header belongs, or a bulk length past bulkBytesMax,
//     512 MB, whose bytes no client will send) is a fatal error and the
//     server closes the connection after replying, as Redis does.
//   - Replies follow the wire contract in DESIGN.md word for word:
//     -INSUFFICIENT available <k>, -NOTFOUND no such row, -ERR <detail>.
//
// What it must never do: panic on any input (FuzzRESPCommand checks this),
// allocate per argument on the hot path, or change state: decoding an op
// only fills an inventory.Op, it never applies it.
//
// The decoder is written here rather than taken from tidwall/redcon: redcon
// v1.6.2's parsers index out of range on a bulk length near 2^63 (for
// example "*1\r\n$9223372036854775807\r\n"), which panics the connection
// goroutine and with it the whole server process, and they grow their buffer
// without a bound. A decoder with a limit on every field and a fuzz target
// costs less than working around both.
package resp
