// Package ingest follows a MySQL or MariaDB table into allot's catalog
// (`allot ingest mysql`): inserts, updates and deletes, read from the
// server's binary log in row format (github.com/go-mysql-org/go-mysql's
// replication package), never by polling, which misses updates and
// deletes.
//
// The caller's contract, step by step:
//
//  1. With no checkpoint (Config.StateFile absent), Run takes a snapshot:
//     in one consistent-snapshot transaction it reads the binlog position
//     the snapshot stands at (binlog_snapshot_file/position) and every row
//     of the table, and sets each row's record in allot. Before the first
//     record it writes that position as an unfinished snapshot, after the
//     last the checkpoint. A crash in between repeats the snapshot and then
//     follows the binlog from the first attempt's position, so that the
//     records it set of rows deleted (or moved to another SKU) since are
//     deleted too; CATALOG.SET of the same record is the same state.
//     A row allot's catalog cannot hold (catalog.Record.Check: an empty,
//     NULL or overlong title or brand, a control character) is skipped and
//     counted, and its SKU's record deleted. Values read from the binlog
//     are rendered as the snapshot's SELECT reads them: ENUM and SET by
//     their members, strings converted from their column's character set,
//     UNSIGNED integers unsigned, FLOAT, DOUBLE and TIME as the server
//     prints them, TIMESTAMP in the session's time zone, BIT (from both)
//     as its unsigned decimal value (values.go).
//     A partial row image (binlog_row_image not FULL) stops the ingester.
//     A source whose binlog_format is not ROW is refused at start.
//  2. It follows the binlog from the checkpoint. Every row of a rows event
//     becomes one CATALOG.SET (insert, update) or CATALOG.DEL (delete; an
//     update that changes the SKU is a DEL of the old one and a SET of the
//     new), sent with the idempotency key
//     "mysql:<binlog file>:<event end position>:<row index>" (DESIGN.md,
//     "Idempotency"). allot journals the key atomically with the record.
//     A transaction's rows are held back until its end (at most
//     transactionRowsMax of them, transaction.go): a commit sends them, a
//     ROLLBACK or ROLLBACK TO SAVEPOINT (the binary log carries rolled-back
//     rows when a non-transactional table changed too) drops what it
//     undid. A change written as a statement (a session with binlog_format
//     STATEMENT or MIXED) in the table's database stops the ingester, with
//     the checkpoint before it.
//  3. After the rows of a transaction are acknowledged (allot's durability
//     mode decides what that survives), the position after the
//     transaction's commit event is the new checkpoint, written with a
//     rename (throttled to CheckpointEvery); so is the start of a new
//     binlog file the source rotates to between transactions, so that an
//     idle source's purge of old files does not strand the checkpoint.
//     The checkpoint also names the source (@@server_uuid; MariaDB's
//     @@server_id and @@gtid_domain_id), when its binlog file was created
//     (learnt from the file's format description event as soon as the
//     stream reads it), and the table's column order at its position: a
//     DSN that reaches another server, at start or at any start of the
//     binlog stream after (each reads the identity on the stream's own
//     connection before it asks for the binary log), is refused
//     (ErrOtherSource), and so is the same name's file created anew (the
//     position names other events there); rows without column names
//     written before an ALTER TABLE that moved the columns stop the
//     ingester rather than be mapped by the order read at start.
//
// So after a kill -9 of the ingester, it resumes from a checkpoint at or
// before the last acknowledged transaction; the events in between are sent
// again with the same keys, and allot answers them from its key table
// without applying them: nothing is lost, nothing is applied twice. After a
// kill -9 of allot, the ingester retries the unacknowledged op with the
// same key until allot is back. A lost connection to the source is retried
// until the source is back, each failed attempt logged and counted, and the
// binlog read again from the last acknowledged transaction; another server
// answering the DSN then stops the ingester (ErrOtherSource). A stream is
// closed without the binlog library's KILL of its connection id, which it
// sends on a new connection to the DSN, where after a lost connection the
// id may be another client's. The window
// this holds for is allot's key retention (24 h by default): an ingester
// stopped longer than that must start from a fresh snapshot (delete its
// state file).
//
// Lag (the source's commit time, from the event header, to the moment
// allot acknowledged the op: the record is then searchable) and the
// counts are exposed by Metrics in the Prometheus text format.
package ingest
