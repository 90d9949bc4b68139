// Package sqlrecords is the records capability (store.RWStore) of the SQL
// adapters — postgres, mysql (InnoDB) and mysql-myisam — over
// database/sql, one table (k, v, ver), each statement written as that
// database's experts would:
//
//   - Read: SELECT v. With the hard lock the read locks too (FOR SHARE in
//     PostgreSQL, LOCK IN SHARE MODE in InnoDB), so it waits while a writer
//     holds FOR UPDATE; with the soft lock it is a plain SELECT, which
//     MVCC answers from the last committed version without waiting.
//     MyISAM has no MVCC: every read takes the table's read lock and waits
//     for a writer, so only the hard lock exists there.
//   - Write: INSERT, one autocommit statement per record, or --batch of
//     them in one transaction (MyISAM has no transactions: refused).
//   - Modify without a lock: SELECT v, then UPDATE ... SET v = <read+delta>,
//     at READ COMMITTED: concurrent modifies lose updates.
//   - Modify under a lock: SELECT ... FOR UPDATE, then the UPDATE, in one
//     transaction, keys in sorted order (MyISAM: LOCK TABLES ... WRITE
//     around them). Deadlocks and serialization failures are retried and
//     counted.
//   - Versioned: SELECT v, ver, then UPDATE ... SET v=?, ver=ver+1 WHERE
//     k=? AND ver=?; no row changed means another writer won: read again
//     and retry, counted.
//   - kv (store.RWPipeliner): N keys in one round trip as one multi-row
//     upsert or one SELECT ... IN (...): MySQL's protocol has no
//     pipelining, so the SQL stores batch instead, and say so.
package sqlrecords

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"allot/store"
)

// Dialect is what differs between the databases.
type Dialect struct {
	// Name names the database and engine in errors and the setting.
	Name string
	// Table is the records table, quoted as the database wants.
	Table string
	// Create makes the table (Table already dropped).
	Create string
	// Placeholder returns the i-th (1-based) parameter marker.
	Placeholder func(i int) string
	// ShareLock is appended to a hard-lock read ("FOR SHARE").
	ShareLock string
	// TableLocks: MyISAM: no row locks, no transactions, no MVCC.
	TableLocks bool
	// UpsertSuffix turns a multi-row INSERT into insert-or-overwrite.
	UpsertSuffix string
	// IsConflict reports a deadlock or serialization failure.
	IsConflict func(error) bool
	// SessionSetup runs on each session's connection (durability).
	SessionSetup []string
	// Setting names the durability setting in use.
	Setting string
	// Restore undoes server-wide settings RWOpen changed; may be nil.
	Restore func(ctx context.Context) error
}

// conflictRetriesMax bounds the retries of one call.
const conflictRetriesMax = 1000

// loadBatch is how many records one INSERT carries when loading.
const loadBatch = 500

// Space is a record space in one table.
type Space struct {
	db   *sql.DB
	d    Dialect
	opts store.RWOptions
	// closeDB: the space opened db and closes it.
	closeDB bool
}

// Open creates the space's table (d.Table, named with store.RWSpaceID by
// the caller; dropped first if a dead process left it) and returns the
// space. db stays the caller's unless closeDB.
func Open(ctx context.Context, db *sql.DB, closeDB bool, d Dialect, opts store.RWOptions) (*Space, error) {
	if d.TableLocks {
		if opts.Transactional {
			return nil, fmt.Errorf("%w: %s has no transactions (its writes autocommit whatever BEGIN says)", store.ErrRWUnsupported, d.Name)
		}
		if opts.Lock == store.RWLockSoft {
			return nil, fmt.Errorf("%w: %s has no MVCC: every read waits for a writer's table lock, so only --lock hard exists", store.ErrRWUnsupported, d.Name)
		}
	}
	if _, err := db.ExecContext(ctx, "DROP TABLE IF EXISTS "+d.Table); err != nil {
		return nil, fmt.Errorf("%s: dropping %s: %w", d.Name, d.Table, err)
	}
	if _, err := db.ExecContext(ctx, d.Create); err != nil {
		return nil, fmt.Errorf("%s: creating %s: %w", d.Name, d.Table, err)
	}
	return &Space{db: db, d: d, opts: opts, closeDB: closeDB}, nil
}

func (s *Space) Info() store.RWInfo {
	read := "reads plain SELECT (MVCC, soft)"
	switch {
	case s.d.TableLocks:
		read = "reads take the table read lock (hard); modify locked under LOCK TABLES WRITE"
	case s.opts.Lock == store.RWLockHard:
		read = "reads SELECT ... " + s.d.ShareLock + " (hard)"
	}
	tx := "autocommit"
	if s.opts.Transactional {
		tx = "one transaction per call"
	}
	return store.RWInfo{Setting: s.d.Setting + "; " + read + "; " + tx}
}

// Load inserts recs in multi-row INSERTs.
func (s *Space) Load(ctx context.Context, recs []store.RWRecord) error {
	for i := 0; i < len(recs); i += loadBatch {
		part := recs[i:min(i+loadBatch, len(recs))]
		q, args := s.insert(part, "")
		if _, err := s.db.ExecContext(ctx, q, args...); err != nil {
			return fmt.Errorf("%s: load: %w", s.d.Name, err)
		}
	}
	return nil
}

// insert builds a multi-row INSERT of recs, with suffix (an upsert's).
func (s *Space) insert(recs []store.RWRecord, suffix string) (string, []any) {
	var b strings.Builder
	b.WriteString("INSERT INTO " + s.d.Table + " (k, v, ver) VALUES ")
	args := make([]any, 0, 3*len(recs))
	for i, r := range recs {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "(%s, %s, %s)", s.d.Placeholder(3*i+1), s.d.Placeholder(3*i+2), s.d.Placeholder(3*i+3))
		args = append(args, r.Key, r.Value, r.Version)
	}
	b.WriteString(suffix)
	return b.String(), args
}

// Records reads the whole table.
func (s *Space) Records(ctx context.Context) ([]store.RWRecord, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT k, v, ver FROM "+s.d.Table)
	if err != nil {
		return nil, fmt.Errorf("%s: reading records: %w", s.d.Name, err)
	}
	defer rows.Close()
	var out []store.RWRecord
	for rows.Next() {
		var r store.RWRecord
		if err := rows.Scan(&r.Key, &r.Value, &r.Version); err != nil {
			return nil, fmt.Errorf("%s: reading records: %w", s.d.Name, err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// Close drops the table, restores what RWOpen changed and closes a db
// the space opened.
func (s *Space) Close() error {
	_, err := s.db.ExecContext(context.Background(), "DROP TABLE IF EXISTS "+s.d.Table)
	if s.d.Restore != nil {
		err = errors.Join(err, s.d.Restore(context.Background()))
	}
	if s.closeDB {
		err = errors.Join(err, s.db.Close())
	}
	return err
}

// Session holds one connection for the worker's life, with its
// statements prepared on it once, as the adapters' inventory sessions
// prepare theirs. Executing a statement with arguments by its text would
// cost MariaDB's driver (go-sql-driver without interpolation) a prepare,
// an execute and a close on every call, two round trips where one does;
// PostgreSQL's caches its statements itself, and is prepared here alike.
// Transactions are BEGIN ... COMMIT on the connection, at the isolation
// the dialect's SessionSetup sets for the session (READ COMMITTED):
// database/sql's BeginTx would send the isolation again before every
// transaction (a round trip more on MariaDB), and a transaction of its
// own would prepare the statements again.
func (s *Space) Session(ctx context.Context) (store.RWSession, error) {
	c, err := s.db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.d.Name, err)
	}
	for _, q := range s.d.SessionSetup {
		if _, err := c.ExecContext(ctx, q); err != nil {
			c.Close()
			return nil, fmt.Errorf("%s: %s: %w", s.d.Name, q, err)
		}
	}
	p := s.d.Placeholder
	readShare := "SELECT v FROM " + s.d.Table + " WHERE k = " + p(1)
	if s.opts.Lock == store.RWLockHard && !s.d.TableLocks {
		readShare += " " + s.d.ShareLock
	}
	se := &Session{s: s, c: c, batches: map[batchShape]*sql.Stmt{}}
	for _, st := range []struct {
		stmt **sql.Stmt
		text string
	}{
		{&se.read, "SELECT v FROM " + s.d.Table + " WHERE k = " + p(1)},
		{&se.readVer, "SELECT v, ver FROM " + s.d.Table + " WHERE k = " + p(1)},
		{&se.readLock, "SELECT v FROM " + s.d.Table + " WHERE k = " + p(1) + " FOR UPDATE"},
		{&se.write, "UPDATE " + s.d.Table + " SET v = " + p(1) + " WHERE k = " + p(2)},
		{&se.cas, "UPDATE " + s.d.Table + " SET v = " + p(1) + ", ver = ver + 1 WHERE k = " + p(2) + " AND ver = " + p(3)},
		{&se.readShare, readShare},
		{&se.insert, "INSERT INTO " + s.d.Table + " (k, v, ver) VALUES (" + p(1) + ", " + p(2) + ", 0)"},
	} {
		if *st.stmt, err = c.PrepareContext(ctx, st.text); err != nil {
			se.Close()
			return nil, fmt.Errorf("%s: preparing %s: %w", s.d.Name, st.text, err)
		}
	}
	return se, nil
}

// Session is one worker's connection.
type Session struct {
	s                                                      *Space
	c                                                      *sql.Conn
	read, readVer, readLock, write, cas, readShare, insert *sql.Stmt
	// batches are the kv batches' statements, by shape, prepared on first
	// use (a run's batches have one or two sizes; batchShapesMax bounds
	// what a caller of many sizes leaves prepared).
	batches map[batchShape]*sql.Stmt
}

// batchShape is a kv batch statement: an upsert or a read, of n keys.
type batchShape struct {
	upsert bool
	n      int
}

// batchShapesMax is how many batch statements a session keeps prepared;
// a shape past them is prepared for the call and closed after it.
const batchShapesMax = 8

// undoTimeout bounds a ROLLBACK or UNLOCK TABLES sent after the op's
// context ended: it must still go out (else the connection keeps the
// transaction, its locks and its writes open for the next op to commit),
// but not wait forever on a server that went away.
const undoTimeout = 10 * time.Second

// errNoRecord is a modify of a key that is not there.
var errNoRecord = errors.New("no such record")

func (se *Session) Read(ctx context.Context, key string) (int64, bool, error) {
	var v int64
	err := se.readShare.QueryRowContext(ctx, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("%s: read %s: %w", se.s.d.Name, key, err)
	}
	return v, true, nil
}

// undo runs q (ROLLBACK, UNLOCK TABLES) on the connection even if ctx
// ended, bounded by undoTimeout.
func (se *Session) undo(ctx context.Context, q string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), undoTimeout)
	defer cancel()
	_, err := se.c.ExecContext(ctx, q)
	return err
}

// inTx runs f in a transaction (the session's setting) or on the
// connection (autocommit), retrying conflicts when retry says so.
func (se *Session) inTx(ctx context.Context, tx bool, f func() error) (int, error) {
	for retries := 0; ; retries++ {
		var err error
		if tx {
			if _, err = se.c.ExecContext(ctx, "BEGIN"); err == nil {
				if err = f(); err == nil {
					_, err = se.c.ExecContext(ctx, "COMMIT")
				}
				if err != nil {
					// After a failed COMMIT too: a COMMIT that never
					// reached the server left the transaction open.
					se.undo(ctx, "ROLLBACK")
				}
			}
		} else {
			err = f()
		}
		if err == nil || !se.s.d.IsConflict(err) || retries >= conflictRetriesMax || ctx.Err() != nil {
			return retries, err
		}
	}
}

func (se *Session) Write(ctx context.Context, recs []store.RWRecord) error {
	do := func(r store.RWRecord) error {
		if _, err := se.insert.ExecContext(ctx, r.Key, r.Value); err != nil {
			return fmt.Errorf("%s: insert %s: %w", se.s.d.Name, r.Key, err)
		}
		return nil
	}
	if se.s.opts.Transactional {
		_, err := se.inTx(ctx, true, func() error {
			for _, r := range recs {
				if err := do(r); err != nil {
					return err
				}
			}
			return nil
		})
		return err
	}
	for _, r := range recs {
		if err := do(r); err != nil {
			return err
		}
	}
	return nil
}

func (se *Session) Modify(ctx context.Context, keys []string, delta int64, mode store.RWModify) (int, error) {
	name := se.s.d.Name
	one := func(key string) (conflict bool, err error) {
		switch mode {
		case store.RWUnlocked, store.RWLocked:
			q := se.read
			if mode == store.RWLocked && !se.s.d.TableLocks {
				q = se.readLock
			}
			var v int64
			if err := q.QueryRowContext(ctx, key).Scan(&v); err != nil {
				if errors.Is(err, sql.ErrNoRows) {
					err = errNoRecord
				}
				return false, fmt.Errorf("%s: modify %s: read: %w", name, key, err)
			}
			if _, err := se.write.ExecContext(ctx, v+delta, key); err != nil {
				return false, fmt.Errorf("%s: modify %s: write: %w", name, key, err)
			}
			return false, nil
		case store.RWVersioned:
			var v, ver int64
			if err := se.readVer.QueryRowContext(ctx, key).Scan(&v, &ver); err != nil {
				if errors.Is(err, sql.ErrNoRows) {
					err = errNoRecord
				}
				return false, fmt.Errorf("%s: modify %s: read: %w", name, key, err)
			}
			res, err := se.cas.ExecContext(ctx, v+delta, key, ver)
			if err != nil {
				return false, fmt.Errorf("%s: modify %s: compare-and-set: %w", name, key, err)
			}
			n, err := res.RowsAffected()
			if err != nil {
				return false, err
			}
			return n == 0, nil
		}
		return false, fmt.Errorf("%w: %s modify", store.ErrRWUnsupported, mode)
	}
	lockTables := mode == store.RWLocked && se.s.d.TableLocks
	total := 0
	batch := func() (bool, error) {
		for _, k := range keys {
			conflict, err := one(k)
			if err != nil || conflict {
				return conflict, err
			}
		}
		return false, nil
	}
	run := func(keys []string) error {
		for {
			var conflict bool
			retries, err := se.inTx(ctx, se.s.opts.Transactional || mode == store.RWLocked && !lockTables, func() error {
				if lockTables {
					if _, err := se.c.ExecContext(ctx, "LOCK TABLES "+se.s.d.Table+" WRITE"); err != nil {
						return err
					}
					defer se.undo(ctx, "UNLOCK TABLES")
				}
				var err error
				conflict, err = batch()
				if conflict && se.s.opts.Transactional {
					return errCASFailed
				}
				return err
			})
			total += retries
			if errors.Is(err, errCASFailed) {
				conflict, err = true, nil
			}
			if err != nil {
				return err
			}
			if !conflict {
				return nil
			}
			total++
			if total > conflictRetriesMax {
				return fmt.Errorf("%s: modify %v: %d compare-and-set conflicts in a row", name, keys, total)
			}
		}
	}
	if se.s.opts.Transactional {
		return total, run(keys)
	}
	saved := keys
	for i := range saved {
		keys = saved[i : i+1]
		if err := run(keys); err != nil {
			return total, err
		}
	}
	return total, nil
}

// errCASFailed rolls back a transaction whose compare-and-set lost.
var errCASFailed = errors.New("compare-and-set lost")

// batchStmt returns the prepared statement of shape b (text, when it is
// not prepared yet), and a done to call after its use: it closes a
// statement past batchShapesMax.
func (se *Session) batchStmt(ctx context.Context, b batchShape, text func() string) (*sql.Stmt, func(), error) {
	if st, ok := se.batches[b]; ok {
		return st, func() {}, nil
	}
	st, err := se.c.PrepareContext(ctx, text())
	if err != nil {
		return nil, nil, err
	}
	if len(se.batches) < batchShapesMax {
		se.batches[b] = st
		return st, func() {}, nil
	}
	return st, func() { st.Close() }, nil
}

// PipelineWrite upserts every record in one statement: one round trip.
// The rows are listed in key order: the statement locks them in the order
// it lists them, and two upserts of the same keys in different orders
// (workload kv's batches wrap around its key space) would deadlock.
func (se *Session) PipelineWrite(ctx context.Context, recs []store.RWRecord) error {
	if !slices.IsSortedFunc(recs, compareKeys) {
		recs = slices.SortedFunc(slices.Values(recs), compareKeys)
	}
	q, args := se.s.insert(recs, se.s.d.UpsertSuffix)
	st, done, err := se.batchStmt(ctx, batchShape{upsert: true, n: len(recs)}, func() string { return q })
	if err == nil {
		_, err = st.ExecContext(ctx, args...)
		done()
	}
	if err != nil {
		return fmt.Errorf("%s: upsert of %d records: %w", se.s.d.Name, len(recs), err)
	}
	return nil
}

func compareKeys(a, b store.RWRecord) int { return strings.Compare(a.Key, b.Key) }

// PipelineRead reads every key in one SELECT ... IN: one round trip.
func (se *Session) PipelineRead(ctx context.Context, keys []string, values []int64, found []bool) error {
	args := make([]any, len(keys))
	at := make(map[string][]int, len(keys)) // a key may be asked twice
	for i, k := range keys {
		args[i] = k
		at[k] = append(at[k], i)
		values[i], found[i] = 0, false
	}
	st, done, err := se.batchStmt(ctx, batchShape{n: len(keys)}, func() string {
		var b strings.Builder
		b.WriteString("SELECT k, v FROM " + se.s.d.Table + " WHERE k IN (")
		for i := range keys {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(se.s.d.Placeholder(i + 1))
		}
		b.WriteString(")")
		return b.String()
	})
	if err != nil {
		return fmt.Errorf("%s: read of %d keys: %w", se.s.d.Name, len(keys), err)
	}
	defer done()
	rows, err := st.QueryContext(ctx, args...)
	if err != nil {
		return fmt.Errorf("%s: read of %d keys: %w", se.s.d.Name, len(keys), err)
	}
	defer rows.Close()
	for rows.Next() {
		var k string
		var v int64
		if err := rows.Scan(&k, &v); err != nil {
			return err
		}
		for _, i := range at[k] {
			values[i], found[i] = v, true
		}
	}
	return rows.Err()
}

// Close closes the session's statements and gives its connection back.
func (se *Session) Close() error {
	for _, st := range []*sql.Stmt{se.read, se.readVer, se.readLock, se.write, se.cas, se.readShare, se.insert} {
		if st != nil {
			st.Close()
		}
	}
	for _, st := range se.batches {
		st.Close()
	}
	return se.c.Close()
}

var _ store.RWPipeliner = (*Session)(nil)

// ParamsMax is the most placeholders one statement may carry on both
// servers: PostgreSQL's extended protocol counts them in 16 bits, and so
// does MariaDB's prepared statement protocol.
const ParamsMax = 65535

// paramsPerRecord is what insert binds for each record (k, v, ver).
const paramsPerRecord = 3

// PipelineRefusal is a Registration.Refuses for the stores whose kv
// batches run through this package: a batch is one statement
// (PipelineWrite's upsert, PipelineRead's IN list), so a --pipeline whose
// statement would carry more than ParamsMax placeholders is refused
// before the run, rather than failing every batch in it. Splitting a
// batch into several statements would measure something else.
func PipelineRefusal(u store.Use) string {
	if u.Workload != "kv" {
		return ""
	}
	per, what := paramsPerRecord, "written"
	if u.ReadOnly {
		per, what = 1, "read"
	}
	if u.Pipeline*per > ParamsMax {
		return fmt.Sprintf("workload kv: --pipeline %d: a batch is one statement, and %d keys %s take %d placeholders, more than the %d a statement may carry (--pipeline %d at most)",
			u.Pipeline, u.Pipeline, what, u.Pipeline*per, ParamsMax, ParamsMax/per)
	}
	return ""
}
