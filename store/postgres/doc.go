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
// Durability (store.Config; store.PostgresFsync and
// store.PostgresSynchronousCommit): fsync is fsync=on with
// synchronous_commit=on; write is fsync=off with synchronous_commit=on (a
// commit returns once its WAL is written to the OS, which never flushes it
// on request: a crash of the server loses nothing acknowledged; a power
// cut or a crash of the OS, during the run or before the OS wrote the
// pages back, may lose commits and, in PostgreSQL's own words, corrupt
// the whole cluster: the project's server holds only bench data); none is an UNLOGGED table with fsync=off and
// synchronous_commit=off (crash recovery empties the table). write is not
// synchronous_commit=off: that acknowledges commits whose WAL is still in
// the server's shared buffers, and the kill audit lost them when it
// killed the server. synchronous_commit is set on every connection; fsync
// is the whole server's, so Open (and RWOpen, for --durable) makes the
// server run with the durability's: a server that runs with another is
// switched with ALTER SYSTEM SET fsync and a reload, as a superuser (this
// role, or store.PostgresSuperuser), the way the MariaDB adapter sets its
// globals; where that fails Open refuses with store.ErrDurabilityMismatch
// and names the statements to run. services, which writes fsync into the
// server's configuration, drops ALTER SYSTEM's whenever it starts or
// switches the server.
//
// Invariants: input is checked in Go (inventory's Check functions) before a
// statement is sent, so a bad op never reaches the server; a capture that
// finds too little stock rolls back and changes nothing; deadlocks and
// serialization failures are retried, up to a bound, and counted
// (store.Retrier). Locks are always taken in the group index's order, so
// captures do not deadlock one another.
//
// What it must never do: read then write without the row locks (that is the
// naive adapter's job, to prove the checker), talk to any server but the
// one it was given, or change any server setting but fsync.
package postgres
