// Package rw is workload "rw": plain reads, inserts and read-modify-writes
// of records on every store that holds them (store.RWStore), in the shape
// of a load-test bench whose runs compared MySQL InnoDB and MyISAM,
// RabbitMQ and Elasticsearch with soft and hard locks, transactional and
// durable switches.
//
// Request types (--request-type):
//   - READ: read a random loaded record by key (on a queue: consume the
//     next message, with an ack);
//   - WRITE: insert new records (on a queue: publish);
//   - MODIFY: add 1 to a random record by reading it and writing it back
//     with no lock between: concurrent modifies lose updates, and the
//     checker counts them (extra "lost_updates") instead of hiding them;
//     with --versioned the write is a compare-and-set on a version and a
//     conflict is retried (counted as conflict retries);
//   - MODIFY_LOCKED: the same under an exclusive lock (or one atomic step
//     where the datastore has one): no update may be lost;
//   - MIXED: reader workers (--read-ratio of the workers, at least one)
//     beside workers doing locked (or --versioned) modifies; the result
//     reports read and write rates apart, each over the time its own
//     workers took, so --lock hard (reads wait for a writer's lock) and
//     --lock soft (reads see the last committed value) can be compared
//     under writers.
//
// --transactional puts --batch records in one transaction; --durable picks
// the store's durable setting or its fast one, and the result names the
// setting (extra "setting").
//
// Invariants: every unit of work is issued once (never retried by the
// bench: a store's own conflict retries are counted); an error counts as
// an error and its updates as "maybe applied"; after the run the records
// are read back and every acknowledged write must be there (check.go).
package rw
