package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"allot/inventory"
)

// Session is one worker's connection. A capture costs two round trips:
// BEGIN and the locking SELECT are pipelined in one batch, then the UPDATEs
// and COMMIT in another. The alternative, one statement per round trip,
// spends most of a capture waiting on the network while holding row locks.
type Session struct {
	conn      *pgxpool.Conn
	store     *Store // its catalog, for Search
	conflicts int64
	stock     []inventory.Line // the locked rows of the current capture, reused
}

// Capture takes n units of g: lock the group's rows in warehouse order,
// allocate in Go, update the touched rows, commit. Deadlocks and
// serialization failures are retried (ConflictRetries counts them).
func (s *Session) Capture(ctx context.Context, g inventory.GroupKey, n int64, lines []inventory.Line) (inventory.Result, error) {
	if op := inventory.Capture(g, n); op.Check() != "" {
		return inventory.Result{Code: inventory.CodeInvalid, Detail: op.Check()}, nil
	}
	for attempt := 0; ; attempt++ {
		res, err := s.capture(ctx, g, n, lines)
		if err != nil && IsConflict(err) && attempt < conflictRetriesMax {
			s.conflicts++
			continue
		}
		return res, err
	}
}

func (s *Session) capture(ctx context.Context, g inventory.GroupKey, n int64, lines []inventory.Line) (inventory.Result, error) {
	c := s.conn.Conn()
	b := &pgx.Batch{}
	b.Queue("begin")
	b.Queue("capture_lock", g.SKU, g.Condition, g.Source)
	br := c.SendBatch(ctx, b)
	_, err := br.Exec()
	if err == nil {
		s.stock, err = scanStock(br, s.stock[:0])
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return inventory.Result{}, s.abort(ctx, "capture", err)
	}
	res := inventory.Allocate(s.stock, n, lines)
	if res.Code != inventory.CodeOK {
		if err := s.rollback(ctx); err != nil {
			return inventory.Result{}, fmt.Errorf("postgres: capture: rollback: %w", err)
		}
		return res, nil
	}
	b = &pgx.Batch{}
	for _, l := range res.Lines {
		b.Queue("capture_take", g.SKU, l.Warehouse, g.Condition, g.Source, l.Count)
	}
	b.Queue("commit")
	br = c.SendBatch(ctx, b)
	for range len(res.Lines) + 1 {
		if _, err = br.Exec(); err != nil {
			break
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return inventory.Result{}, s.abort(ctx, "capture", err)
	}
	return res, nil
}

func scanStock(br pgx.BatchResults, stock []inventory.Line) ([]inventory.Line, error) {
	rows, err := br.Query()
	if err != nil {
		return stock, err
	}
	defer rows.Close()
	for rows.Next() {
		var w inventory.Line
		if err := rows.Scan(&w.Warehouse, &w.Count); err != nil {
			return stock, err
		}
		stock = append(stock, w)
	}
	return stock, rows.Err()
}

// abort rolls back after a failed statement (the transaction is in the
// failed state, or still open when the failure was the op's context
// ending between two round trips) and returns err with context.
func (s *Session) abort(ctx context.Context, op string, err error) error {
	s.rollback(ctx)
	return fmt.Errorf("postgres: %s: %w", op, err)
}

// rollback ends the session's open transaction, even when ctx ended: pgx
// sends nothing on an ended context, so a ROLLBACK on it left the
// connection inside the transaction, its row locks held, and the worker's
// next op ran inside it (BEGIN is only a warning there) and committed the
// abandoned op's writes with its own. It is bounded by the store's
// timeout; a connection that could not roll back is closed, which ends the
// transaction on the server.
func (s *Session) rollback(ctx context.Context) error {
	c := s.conn.Conn()
	if c.IsClosed() {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.store.cfg.Timeout)
	defer cancel()
	_, err := c.Exec(ctx, "rollback")
	if err != nil && !c.IsClosed() {
		c.Close(ctx)
	}
	return err
}

// Release adds n units to row k in one statement. An unknown row is
// CodeNotFound; a count that would pass inventory.CountMax is CodeOverflow.
// Neither changes anything.
func (s *Session) Release(ctx context.Context, k inventory.RowKey, n int64) (inventory.Result, error) {
	if op := inventory.Release(k, n); op.Check() != "" {
		return inventory.Result{Code: inventory.CodeInvalid, Detail: op.Check()}, nil
	}
	c := s.conn.Conn()
	// The bound is a fixed number of tries: a row's count can only move
	// back below the limit by captures racing with us, and each try that
	// sees that is followed by one that applies.
	for attempt := 0; ; attempt++ {
		var count int64
		err := c.QueryRow(ctx, "release", k.SKU, k.Warehouse, k.Condition, k.Source, n).Scan(&count)
		if err == nil {
			return inventory.Result{Code: inventory.CodeOK, Count: count}, nil
		}
		if IsConflict(err) && attempt < conflictRetriesMax {
			s.conflicts++
			continue
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return inventory.Result{}, fmt.Errorf("postgres: release: %w", err)
		}
		err = c.QueryRow(ctx, "row_count", k.SKU, k.Warehouse, k.Condition, k.Source).Scan(&count)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return inventory.Result{Code: inventory.CodeNotFound}, nil
		case err != nil:
			return inventory.Result{}, fmt.Errorf("postgres: release: %w", err)
		case count > inventory.CountMax-n:
			return inventory.Result{Code: inventory.CodeOverflow, Detail: "release would carry the count past 4611686018427387903"}, nil
		case attempt >= conflictRetriesMax:
			return inventory.Result{}, fmt.Errorf("postgres: release: row %v kept changing under the overflow check", k)
		}
	}
}

// ConflictRetries is how many transactions this session retried after a
// deadlock or a serialization failure.
func (s *Session) ConflictRetries() int64 { return s.conflicts }

// Close gives the connection back to the pool.
func (s *Session) Close() error {
	s.conn.Release()
	return nil
}
