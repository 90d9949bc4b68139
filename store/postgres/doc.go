// Package postgres is the bench's PostgreSQL adapter ("postgres"), written
// the way PostgreSQL's users write reservations: a capture is one
// transaction that locks the group's rows with SELECT ... FOR UPDATE in
// warehouse order, allocates in Go by the domain's rule, updates each
// touched row and commits; a release is one UPDATE ... RETURNING.
//
// Schema (sql/schema.sql): one table rows(sku, warehouse, cond, source,
// count, price) with the primary key on the row key and an index on the
// group (sku, cond, source, warehouse). Identifiers are COLLATE "C", so
// ORDER BY warehouse is ascending byte order, the domain's allocation
// order. count carries CHECK (count >= 0) as a last line of defence.
//
// Durability (store.Config): fsync is synchronous_commit=on; write is
// synchronous_commit=off (commits are written by the WAL writer within
// wal_writer_delay, a crash of the server loses nothing the OS has, a power
// cut may lose the last moments); none is an UNLOGGED table with
// synchronous_commit=off.
//
// Invariants: input is checked in Go (inventory's Check functions) before a
// statement is sent, so a bad op never reaches the server; a capture that
// finds too little stock rolls back and changes nothing; deadlocks and
// serialization failures are retried, up to a bound, and counted
// (store.Retrier). Locks are always taken in the group index's order, so
// captures do not deadlock one another.
//
// What it must never do: read then write without the row locks (that is the
// naive adapter's job, to prove the checker), or talk to any server but the
// one it was given.
package postgres
