package store

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync/atomic"
)

// Records: the optional capability behind workload "rw" (bench/rw) and
// workload "kv" (bench/kv). A record is a key with an integer value and a
// version, kept apart from the inventory rows, so that plain reads, inserts
// and read-modify-writes can be compared on every datastore with the
// locking each one offers.

// RWRecord is one record. Version counts the record's versioned updates
// (RWVersioned); stores that keep no version report 0.
type RWRecord struct {
	Key     string
	Value   int64
	Version int64
}

// RWLock is how a reader meets a writer that holds a record's lock.
type RWLock string

const (
	// RWLockHard: the record cannot be read while it is locked; reads take
	// the lock too (SELECT ... FOR SHARE behind SELECT ... FOR UPDATE), or
	// queue behind the writer (allot's pipeline).
	RWLockHard RWLock = "hard"
	// RWLockSoft: readers proceed and see the last committed value (MVCC).
	RWLockSoft RWLock = "soft"
)

// ParseRWLock parses a lock mode.
func ParseRWLock(s string) (RWLock, error) {
	switch l := RWLock(s); l {
	case RWLockHard, RWLockSoft:
		return l, nil
	}
	return "", fmt.Errorf("store: unknown lock %q (want hard or soft)", s)
}

// RWModify is how a session adds to a record's value.
type RWModify int

const (
	// RWUnlocked reads the value, then writes value+delta in a second
	// request, with no lock between: concurrent modifies lose updates, and
	// that is what this mode exists to show.
	RWUnlocked RWModify = iota
	// RWLocked holds an exclusive lock from the read to the write (or does
	// both in one atomic step where the datastore has one): no update is
	// lost.
	RWLocked
	// RWVersioned reads value and version, then writes only if the version
	// is unchanged (compare-and-set), retrying on a conflict: no lock, no
	// lost update, retries counted.
	RWVersioned
)

func (m RWModify) String() string {
	switch m {
	case RWUnlocked:
		return "unlocked"
	case RWLocked:
		return "locked"
	case RWVersioned:
		return "versioned"
	}
	return fmt.Sprintf("RWModify(%d)", int(m))
}

// RWOptions say how a record space behaves. They hold for the whole space:
// the bench opens one space per run.
type RWOptions struct {
	// Lock is what a Read does when a writer holds the record.
	Lock RWLock
	// Transactional: a Write or Modify call with several records runs them
	// in one transaction; without it each record commits on its own
	// (autocommit) and the call is a loop.
	Transactional bool
	// Versioned: modifies will be RWVersioned (a store without a
	// compare-and-set refuses it here rather than on every call).
	Versioned bool
	// Durable selects the datastore's durable setting (an acknowledged
	// write survives power loss) rather than its fast one. A store whose
	// setting is fixed for the whole server when it starts (Tarantool's
	// wal_mode, allot's engine mode) refuses a Durable that contradicts
	// the mode it was opened in, naming the --durability to use.
	Durable bool
	// Confirm, for a message queue without Transactional: wait for the
	// broker's publisher confirm of every message; false is
	// fire-and-forget. Ignored by record stores.
	Confirm bool
}

// RWStore is an optional Store capability: the store can hold records.
//
// Concurrency: RWOpen, and the space's Load, Records, Info and Close, are
// called by one goroutine, never while a session works. Each RWSession is
// used by one goroutine.
type RWStore interface {
	// RWOpen makes a new, empty record space of its own (RWSpaceID), set
	// up as opts say. A combination the datastore cannot
	// express is an error wrapping ErrRWUnsupported, naming what is
	// missing.
	RWOpen(ctx context.Context, opts RWOptions) (RWSpace, error)
}

// RWInfo describes a record space for the results.
type RWInfo struct {
	// Setting names the datastore's settings that realise the options,
	// the durable one first ("synchronous_commit=on; reads FOR SHARE").
	Setting string
	// Queue is set for a message queue: Write publishes, Read consumes
	// (and removes) whichever message comes next whatever the key, and
	// Records drains what is left. Modify is unsupported.
	Queue bool
}

// RWSpace is one record space.
type RWSpace interface {
	Info() RWInfo
	// Load inserts recs (keys not present yet), as fast as the datastore
	// allows; their versions are taken as 0.
	Load(ctx context.Context, recs []RWRecord) error
	// Session opens one worker's connection.
	Session(ctx context.Context) (RWSession, error)
	// Records reads back every record, in any order, for the checker. On
	// a queue it consumes what is left.
	Records(ctx context.Context) ([]RWRecord, error)
	// Close restores any server setting RWOpen changed, removes the
	// space's records (its table, space, keys or queue) and releases its
	// connections.
	Close() error
}

// RWSession is one worker's handle on a record space.
//
// Errors: an error means the call's effect is unknown (some records of
// the call may have been written). A record Read does not find is
// found=false, not an error.
type RWSession interface {
	// Read returns the record's value as the space's RWLock says.
	Read(ctx context.Context, key string) (value int64, found bool, err error)
	// Write inserts new records (one transaction if Transactional).
	// Inserting a key that exists is an error.
	Write(ctx context.Context, recs []RWRecord) error
	// Modify adds delta to each key's value, as mode says (one
	// transaction if Transactional; keys are distinct and sorted, so that
	// two transactions take their locks in one order). It returns how
	// many times it retried for a conflict (a failed compare-and-set, a
	// deadlock, a serialization failure). A key that does not exist is an
	// error.
	Modify(ctx context.Context, keys []string, delta int64, mode RWModify) (retries int, err error)
	Close() error
}

// RWSpaceID returns a name part (digits and _) that no other record space
// of this machine's live processes has: the process id, a counter, and a
// random number drawn once per process. Adapters name their table, space,
// key prefix or queue with it, so that two runs (or a run and a test) on
// one shared server never touch each other's records; Close removes what
// it names. The random part is for processes in two PID namespaces (two
// containers sharing a server), which may have one pid: by pid and counter
// alone both got "1_1", and a SQL adapter's DROP TABLE IF EXISTS of its
// name dropped the other run's live table.
func RWSpaceID() string {
	return fmt.Sprintf("%d_%d_%d", os.Getpid(), rwSpaceCounter.Add(1), rwSpaceNonce)
}

var (
	rwSpaceCounter atomic.Int64
	rwSpaceNonce   = rand.Uint32()
)

// ErrRWUnsupported is wrapped by an RWStore when asked for what its
// datastore cannot do (a versioned modify on a queue, a soft lock where
// reads must queue).
var ErrRWUnsupported = errors.New("store: records: not supported by this store")

// RWPipeliner is an optional RWSession capability for workload "kv": keep
// many raw reads or writes in flight on the session's one connection.
type RWPipeliner interface {
	// PipelineWrite sets each record's value (creating it if missing,
	// overwriting it if not), all sent before the first reply is awaited.
	PipelineWrite(ctx context.Context, recs []RWRecord) error
	// PipelineRead reads every key at once; values[i] is key i's value
	// (and found[i] whether it exists).
	PipelineRead(ctx context.Context, keys []string, values []int64, found []bool) error
}
