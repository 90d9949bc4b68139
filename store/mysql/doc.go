// Package mysql is the bench's MariaDB adapters: "mysql" on InnoDB and
// "mysql-myisam" on MyISAM (the seed report's two MySQL engines), written
// the way MySQL users write reservations.
//
// InnoDB: a capture is one transaction (READ COMMITTED) that locks the
// group's rows with SELECT ... FOR UPDATE in warehouse order, allocates in
// Go by the domain's rule, updates each touched row and commits. MyISAM has
// neither row locks nor transactions: the same steps run under LOCK TABLES
// ... WRITE, so captures of every group take turns. A release is one UPDATE
// that hands the new count back through LAST_INSERT_ID(expr), atomic on
// both engines.
//
// Schema (sql/schema.sql): one table (rows for InnoDB, rows_myisam for
// MyISAM) keyed by (sku, warehouse, cond, source) with an index on the
// group (sku, cond, source, warehouse). Identifiers are VARBINARY(64), so
// ORDER BY warehouse is ascending byte order, the domain's allocation
// order. count carries CHECK (count >= 0).
//
// Durability (store.Config), set server-wide at Open because MariaDB has no
// per-session equivalent: InnoDB fsync/write/none is
// innodb_flush_log_at_trx_commit 1/2/0. MyISAM has no log: fsync sets
// flush=ON (changes synced after every statement), write and none leave it
// OFF (changes reach the OS after every statement). The binary log is on
// and takes both engines' writes: sync_binlog is 1 in fsync mode, else 0,
// for both (store.MariaDBSyncBinlog).
//
// Lock order: captures lock through the group index and every UPDATE goes
// through the primary key (index hints in sql/): with the optimizer free to
// pick, a release's UPDATE sometimes went through the group index while a
// capture held primary-key records, and about one op in a thousand
// deadlocked on the seed preset; with the hints, none did.
//
// Invariants: input is checked in Go before a statement is sent; a capture
// that finds too little stock undoes and changes nothing; deadlocks (error
// 1213) that still happen are retried up to a bound and counted
// (store.Retrier); a capture never leaves a table lock or a transaction
// open on a pooled connection.
//
// What it must never do: update without holding the lock that covers the
// read, or change a server setting other than the durability ones.
package mysql
