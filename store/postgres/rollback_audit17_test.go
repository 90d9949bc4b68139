package postgres

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"allot/inventory"
	"allot/services"
	"allot/services/servicestest"
	"allot/store"
)

// cancelAfterBatch cancels a context when the armed-th batch sent on its
// connection has ended: the op's context ends between two of its round
// trips, deterministically.
type cancelAfterBatch struct {
	armed  atomic.Int32 // batches to let end before cancelling; 0: off
	cancel atomic.Pointer[context.CancelFunc]
}

func (c *cancelAfterBatch) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return ctx
}
func (c *cancelAfterBatch) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (c *cancelAfterBatch) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}
func (c *cancelAfterBatch) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (c *cancelAfterBatch) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {
	if c.armed.Load() > 0 && c.armed.Add(-1) == 0 {
		(*c.cancel.Load())()
	}
}

// arm returns a context that is cancelled once n batches have ended.
func (c *cancelAfterBatch) arm(n int32) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel.Store(&cancel)
	c.armed.Store(n)
	return ctx
}

// tracedSession opens a store on a schema of this test's and a session of
// its own over a pool whose connections report their batches to tr.
func tracedSession(t *testing.T, tr *cancelAfterBatch) (*Store, *Session) {
	t.Helper()
	servicestest.Require(t, services.Postgres)
	ctx := context.Background()
	// fsync is what the project's server runs with: Open leaves it alone.
	st, err := Open(ctx, store.Config{Durability: store.DurabilityFsync, Workers: 2}, Options{Schema: "test_postgres_audit17"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	row := inventory.Row{Key: inventory.RowKey{SKU: "s1", Warehouse: "w1", Condition: "new", Source: "own"}, Count: 10, Price: 100}
	if err := st.Load(ctx, []inventory.Row{row}); err != nil {
		t.Fatal(err)
	}
	stop, err := st.PrepareCheckout(ctx, store.CheckoutConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stop() })
	pc := st.pool.Config()
	pc.ConnConfig.Tracer = tr
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	c, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	se := &Session{conn: c, store: st}
	t.Cleanup(func() { se.Close() })
	return st, se
}

func count(t *testing.T, st *Store) int64 {
	t.Helper()
	rows, err := st.Rows(context.Background())
	if err != nil || len(rows) != 1 {
		t.Fatalf("rows: %v, %v", rows, err)
	}
	return rows[0].Count
}

// An op whose context ends between its round trips must not leave its
// transaction open on the session's connection: the ROLLBACK went out on
// that same ended context, so pgx refused to send it, and the connection
// stayed inside the transaction, its row locks held. The worker's next op
// then ran inside it (BEGIN is only a warning there) and its COMMIT
// committed the abandoned op's writes too: a HOLD whose id row was
// claimed but whose lines never came was committed as a live hold with no
// lines and a deadline of 0, and the retry of that HOLD (what a client
// does after an error) was answered OK with no units held.
func TestAudit17CancelledOpLeavesNoTransactionOpen(t *testing.T) {
	ctx := context.Background()
	g := inventory.GroupKey{SKU: "s1", Condition: "new", Source: "own"}
	lines := []store.CartLine{{Group: g, N: 2}}

	t.Run("hold", func(t *testing.T) {
		tr := &cancelAfterBatch{}
		st, se := tracedSession(t, tr)
		var res store.HoldResult
		// The first batch (BEGIN, claim the id, lock the rows) ends, then
		// the context: the second (take, lines, COMMIT) is never sent.
		if err := se.Hold(tr.arm(1), "h1", time.Minute, lines, &res); err == nil {
			t.Fatal("a hold whose context ended before its commit succeeded")
		}
		if st := se.conn.Conn().PgConn().TxStatus(); st != 'I' && !se.conn.Conn().IsClosed() {
			t.Errorf("after a hold cancelled between its round trips the session's connection is in transaction state %q, want idle", st)
		}
		// The worker goes on with a context of its own.
		if res, err := se.Capture(ctx, g, 1, nil); err != nil || res.Code != inventory.CodeOK {
			t.Fatalf("capture after the cancelled hold: %+v, %v", res, err)
		}
		res.Reset()
		if err := se.Hold(ctx, "h1", time.Minute, lines, &res); err != nil {
			t.Fatal(err)
		}
		held := int64(0)
		for _, l := range res.Lines {
			held += l.Count
		}
		if res.Code != store.CheckoutOK || held != 2 {
			t.Errorf("the retried hold h1: code %v, %d units in %d lines (expires %d); want 2 units held", res.Code, held, len(res.Lines), res.ExpiresAtMS)
		}
		if got := count(t, st); got != 10-1-held {
			t.Errorf("row count %d after a capture of 1 and a hold of %d, want %d", got, held, 10-1-held)
		}
	})

	t.Run("capture", func(t *testing.T) {
		tr := &cancelAfterBatch{}
		st, se := tracedSession(t, tr)
		// BEGIN and the locking read end, then the context: the UPDATE
		// and COMMIT are never sent.
		if _, err := se.Capture(tr.arm(1), g, 3, nil); err == nil {
			t.Fatal("a capture whose context ended before its commit succeeded")
		}
		if st := se.conn.Conn().PgConn().TxStatus(); st != 'I' && !se.conn.Conn().IsClosed() {
			t.Errorf("after a capture cancelled between its round trips the session's connection is in transaction state %q, want idle", st)
		}
		// Its row lock is gone: another connection's update does not wait.
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if _, err := st.pool.Exec(wctx, "UPDATE rows SET count = count WHERE sku = 's1'"); err != nil {
			t.Errorf("updating the row a cancelled capture had locked: %v", err)
		}
		if got := count(t, st); got != 10 {
			t.Errorf("row count %d after a capture that was not applied, want 10", got)
		}
	})

	t.Run("insufficient capture", func(t *testing.T) {
		tr := &cancelAfterBatch{}
		_, se := tracedSession(t, tr)
		// More than the group holds: the rollback is the only statement
		// after the first batch, and it goes out on the ended context.
		if _, err := se.Capture(tr.arm(1), g, 11, nil); err != nil {
			t.Logf("insufficient capture on an ended context: %v", err)
		}
		if st := se.conn.Conn().PgConn().TxStatus(); st != 'I' && !se.conn.Conn().IsClosed() {
			t.Errorf("after an insufficient capture whose context ended the session's connection is in transaction state %q, want idle", st)
		}
	})
}
