package ingest

import (
	"context"
	"fmt"

	"github.com/go-mysql-org/go-mysql/replication"
)

// transactionRowsMax bounds the rows of the followed table one
// transaction holds back until its end (transaction).
const transactionRowsMax = 100_000

// transaction holds back the followed table's rows events of the event
// group (transaction) being read until its end says what became of them:
// a commit (XID, or COMMIT after changes to a non-transactional table)
// sends them, ROLLBACK drops them, ROLLBACK TO SAVEPOINT drops those after
// the savepoint. The binary log carries rows the source rolled back when
// the transaction also changed a non-transactional table (MyISAM), so
// that replicas apply them and take them back: MariaDB writes such a
// transaction's rows, SAVEPOINT and ROLLBACK TO (or ROLLBACK, for a
// savepoint it did not write). Sending rows as they came put rows the
// table never had into the catalog.
//
// It holds at most Ingester.transactionRowsMax rows: a longer
// transaction's rows are sent as they come from then on (spilled), and a
// rollback of rows already sent stops the ingester (the catalog cannot
// take them back). Holding back without bound was rejected: one bulk
// transaction would hold all of its rows in memory.
type transaction struct {
	open       bool           // inside an event group: after BEGIN, or MariaDB's GTID of a transaction
	held       []heldRows     // the group's rows events of the table after the sent ones
	heldRows   int            // the rows of held
	sent       int            // the group's rows events of the table sent before its end
	savepoints map[string]int // savepoint name -> the group's rows events of the table before it
}

// heldRows is a rows event of the followed table held back until its
// transaction ends.
type heldRows struct {
	h    *replication.EventHeader
	e    *replication.RowsEvent
	file string
}

// hold holds back a rows event of the followed table until its
// transaction ends, or sends it and those held before it when the
// transaction outgrows transactionRowsMax.
func (in *Ingester) hold(ctx context.Context, tx *transaction, h *replication.EventHeader, e *replication.RowsEvent, file string) error {
	tx.open = true
	tx.held = append(tx.held, heldRows{h: h, e: e, file: file})
	tx.heldRows += len(e.Rows)
	if tx.heldRows <= in.transactionRowsMax {
		return nil
	}
	if tx.sent == 0 {
		in.logf("a transaction ending after %s:%d has more than %d rows of %s: sending them before it ends; a rollback of them would stop the ingester",
			file, h.LogPos, in.transactionRowsMax, in.cfg.Table)
	}
	return in.release(ctx, tx)
}

// release sends the rows events held, in order.
func (in *Ingester) release(ctx context.Context, tx *transaction) error {
	for _, r := range tx.held {
		if err := in.applyRows(ctx, r.h, r.e, r.file); err != nil {
			return err
		}
	}
	tx.sent += len(tx.held)
	tx.held, tx.heldRows = nil, 0
	return nil
}

// savepoint marks savepoint name at the group's rows events so far.
func (tx *transaction) savepoint(name string) {
	if tx.savepoints == nil {
		tx.savepoints = map[string]int{}
	}
	tx.savepoints[name] = tx.sent + len(tx.held)
}

// rollBack drops the rows events of the group after its first to, which a
// ROLLBACK (to 0) or ROLLBACK TO SAVEPOINT ending at file:pos undid. A
// non-transactional table's rows stand: nothing undoes them.
func (in *Ingester) rollBack(tx *transaction, to int, file string, pos uint32) error {
	if !in.transactional {
		return nil
	}
	if to < tx.sent {
		return fmt.Errorf("ingest: at %s:%d the source rolled back rows of %s.%s that the ingester had sent to allot (the transaction had more than the %d rows it holds back): the catalog holds rows the table does not have; delete those records and start from a new snapshot (remove the state file %s)",
			file, pos, in.schemaName, in.tableName, in.transactionRowsMax, in.cfg.StateFile)
	}
	tx.held = tx.held[:to-tx.sent]
	tx.heldRows = 0
	for _, r := range tx.held {
		tx.heldRows += len(r.e.Rows)
	}
	for name, at := range tx.savepoints {
		if at > to {
			delete(tx.savepoints, name)
		}
	}
	return nil
}

// rollBackTo drops the rows events after savepoint name. One the binary
// log did not carry was set before anything of the group was written
// there: all of the group's rows go.
func (in *Ingester) rollBackTo(tx *transaction, name, file string, pos uint32) error {
	return in.rollBack(tx, tx.savepoints[name], file, pos)
}
