package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"allot/inventory"
	"allot/store"
)

// Session is one worker's connection with its statements prepared on it.
//
// A capture runs between guard[0] and guard[1]: START TRANSACTION and
// COMMIT for InnoDB, LOCK TABLES ... WRITE and UNLOCK TABLES for MyISAM
// (guard[2] undoes: ROLLBACK, or UNLOCK TABLES since MyISAM cannot). InnoDB
// sessions run READ COMMITTED: a capture locks exactly the rows it reads,
// without the gap locks REPEATABLE READ adds at the group's edges, which
// only make captures of neighbouring groups wait on one another.
type Session struct {
	conn     *sql.Conn
	opt      Options // the store's table and engine (checkout.go)
	store    *Store  // its catalog, for Search
	guard    [3]string
	lock     *sql.Stmt
	take     *sql.Stmt
	release  *sql.Stmt
	rowCount *sql.Stmt
	// search, searchBrand: prepared on first use, on the catalog table
	// prepared names, and again once the store loads another (search.go).
	search, searchBrand *sql.Stmt
	prepared            *catalogTable
	conflicts           int64
	stock               []inventory.Line // the locked rows of the current capture, reused
}

// Session takes a connection from the pool for one worker and prepares its
// statements on it.
func (s *Store) Session(ctx context.Context) (store.Session, error) {
	c, err := s.db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: mysql: %w", store.ErrServerDown, err)
	}
	se := &Session{conn: c, opt: s.opt, store: s, guard: [3]string{"START TRANSACTION", "COMMIT", "ROLLBACK"}}
	if s.opt.Engine == MyISAM {
		lock := "LOCK TABLES `" + s.opt.Table + "` WRITE"
		se.guard = [3]string{lock, "UNLOCK TABLES", "UNLOCK TABLES"}
	} else if _, err := c.ExecContext(ctx, "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED"); err != nil {
		c.Close()
		return nil, fmt.Errorf("mysql: session: %w", err)
	}
	for _, p := range []struct {
		stmt **sql.Stmt
		name string
	}{{&se.lock, "capture_lock"}, {&se.take, "capture_take"}, {&se.release, "release"}, {&se.rowCount, "row_count"}} {
		if *p.stmt, err = c.PrepareContext(ctx, s.text[p.name]); err != nil {
			c.Close()
			return nil, fmt.Errorf("mysql: session: preparing %s: %w", p.name, err)
		}
	}
	return se, nil
}

// Capture takes n units of g: under the guard, read the group's rows in
// warehouse order (locked), allocate in Go by the domain's rule, update the
// touched rows. Deadlocks are retried (ConflictRetries counts them).
func (s *Session) Capture(ctx context.Context, g inventory.GroupKey, n int64, lines []inventory.Line) (inventory.Result, error) {
	if op := inventory.Capture(g, n); op.Check() != "" {
		return inventory.Result{Code: inventory.CodeInvalid, Detail: op.Check()}, nil
	}
	for attempt := 0; ; attempt++ {
		res, err := s.capture(ctx, g, n, lines)
		if err != nil && isConflict(err) && attempt < conflictRetriesMax {
			s.conflicts++
			continue
		}
		return res, err
	}
}

func (s *Session) capture(ctx context.Context, g inventory.GroupKey, n int64, lines []inventory.Line) (inventory.Result, error) {
	if _, err := s.conn.ExecContext(ctx, s.guard[0]); err != nil {
		return inventory.Result{}, fmt.Errorf("mysql: capture: %s: %w", s.guard[0], err)
	}
	res, err := s.allocate(ctx, g, n, lines)
	if err != nil || res.Code != inventory.CodeOK {
		return res, s.undo(err)
	}
	for _, l := range res.Lines {
		if _, err := s.take.ExecContext(ctx, l.Count, g.SKU, l.Warehouse, g.Condition, g.Source); err != nil {
			return inventory.Result{}, s.undo(err)
		}
	}
	if _, err := s.conn.ExecContext(ctx, s.guard[1]); err != nil {
		return inventory.Result{}, s.undo(err)
	}
	return res, nil
}

// undo ends a capture that will not commit and returns err with context.
// It runs without the op's context: a cancelled op must still not leave a
// table locked on a pooled connection.
func (s *Session) undo(err error) error {
	_, uerr := s.conn.ExecContext(context.Background(), s.guard[2])
	if err != nil {
		return fmt.Errorf("mysql: capture: %w", err)
	}
	if uerr != nil {
		return fmt.Errorf("mysql: capture: %s: %w", s.guard[2], uerr)
	}
	return nil
}

// allocate reads the group's locked rows in warehouse order and applies the
// domain's rule (inventory.Allocate).
func (s *Session) allocate(ctx context.Context, g inventory.GroupKey, n int64, lines []inventory.Line) (inventory.Result, error) {
	rows, err := s.lock.QueryContext(ctx, g.SKU, g.Condition, g.Source)
	if err != nil {
		return inventory.Result{}, err
	}
	defer rows.Close()
	s.stock = s.stock[:0]
	var warehouse sql.RawBytes
	var count int64
	for rows.Next() {
		if err := rows.Scan(&warehouse, &count); err != nil {
			return inventory.Result{}, err
		}
		s.stock = append(s.stock, inventory.Line{Warehouse: string(warehouse), Count: count})
	}
	if err := rows.Err(); err != nil {
		return inventory.Result{}, err
	}
	return inventory.Allocate(s.stock, n, lines), nil
}

// Release adds n units to row k in one statement. An unknown row is
// CodeNotFound; a count that would pass inventory.CountMax is CodeOverflow.
// Neither changes anything.
func (s *Session) Release(ctx context.Context, k inventory.RowKey, n int64) (inventory.Result, error) {
	if op := inventory.Release(k, n); op.Check() != "" {
		return inventory.Result{Code: inventory.CodeInvalid, Detail: op.Check()}, nil
	}
	// Bounded: a try that finds the row below the limit after all (a
	// capture moved it) is followed by one that applies.
	for attempt := 0; ; attempt++ {
		r, err := s.release.ExecContext(ctx, n, k.SKU, k.Warehouse, k.Condition, k.Source, n)
		if err != nil && isConflict(err) && attempt < conflictRetriesMax {
			s.conflicts++
			continue
		}
		if err != nil {
			return inventory.Result{}, fmt.Errorf("mysql: release: %w", err)
		}
		affected, err := r.RowsAffected()
		if err != nil {
			return inventory.Result{}, fmt.Errorf("mysql: release: %w", err)
		}
		if affected == 1 {
			count, err := r.LastInsertId()
			if err != nil {
				return inventory.Result{}, fmt.Errorf("mysql: release: %w", err)
			}
			return inventory.Result{Code: inventory.CodeOK, Count: count}, nil
		}
		var count int64
		err = s.rowCount.QueryRowContext(ctx, k.SKU, k.Warehouse, k.Condition, k.Source).Scan(&count)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return inventory.Result{Code: inventory.CodeNotFound}, nil
		case err != nil:
			return inventory.Result{}, fmt.Errorf("mysql: release: %w", err)
		case count > inventory.CountMax-n:
			return inventory.Result{Code: inventory.CodeOverflow, Detail: "release would carry the count past 4611686018427387903"}, nil
		case attempt >= conflictRetriesMax:
			return inventory.Result{}, fmt.Errorf("mysql: release: row %v kept changing under the overflow check", k)
		}
	}
}

// ConflictRetries is how many transactions this session retried after a
// deadlock.
func (s *Session) ConflictRetries() int64 { return s.conflicts }

// Close closes the statements and gives the connection back to the pool.
func (s *Session) Close() error {
	for _, st := range []*sql.Stmt{s.lock, s.take, s.release, s.rowCount} {
		st.Close()
	}
	s.closeSearch()
	return s.conn.Close()
}
