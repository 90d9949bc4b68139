// Package tarantool is the bench's Tarantool adapter, registered twice:
// "tarantool" (the memtx in-memory engine) and "tarantool-vinyl" (the
// vinyl LSM-tree disk engine). Each keeps the rows in its own formatted
// space, with a primary TREE index on (sku, warehouse, condition, source)
// and a non-unique TREE index on (sku, condition, source, warehouse) that
// walks a group in allocation order. Capture and release are Lua functions
// (allot.lua, evaluated at Open) that run in a transaction and are called
// over IPROTO with go-tarantool, the way Tarantool users build this.
//
// Invariants:
//   - string index parts carry no collation, so they compare bytes, which is
//     the domain's warehouse order;
//   - counts travel as msgpack integers and live in 'unsigned' fields; the
//     Lua never turns a count into a double (allot.lua says how), so counts
//     up to 2^62-1 are exact;
//   - a vinyl transaction that conflicts is retried by the Lua function and
//     counted, and the count reaches the bench through store.Retrier;
//   - input is checked in Go before any request is sent: bad input is
//     CodeInvalid and reaches no server.
//
// What it must never do: change the server's configuration. wal_mode is
// fixed when Tarantool starts, so Open only compares it with the mode asked
// for and returns an error wrapping store.ErrDurabilityMismatch when they
// differ; restarting the server in the right mode is the caller's job.
// It only creates, truncates and writes its own spaces.
package tarantool
