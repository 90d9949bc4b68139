package ingest_test

import (
	"testing"
	"time"
)

// TestAudit13ColumnSwapWhileStoppedWithoutNames: without column names in
// the binary log (binlog_row_metadata=MINIMAL) rows are mapped by the
// column order. An UPDATE written while the ingester was stopped, then an
// ALTER TABLE that swaps two columns of the same type (the count stays):
// the restarted ingester read the new order at start and mapped the
// UPDATE's row, written in the old order, by it, setting the title and
// the brand the wrong way round before the ALTER stopped it. It must stop
// before the row, naming both orders, and map nothing.
func TestAudit13ColumnSwapWhileStoppedWithoutNames(t *testing.T) {
	r := newRig(t, columns12, "")
	var metadata string
	if err := r.db.QueryRow("SELECT @@GLOBAL.binlog_row_metadata").Scan(&metadata); err != nil {
		t.Fatal(err)
	}
	r.exec("SET GLOBAL binlog_row_metadata = 'MINIMAL'")
	t.Cleanup(func() { r.db.Exec("SET GLOBAL binlog_row_metadata = '" + metadata + "'") })
	r.exec("INSERT INTO `"+r.table+"` VALUES (?,?,?)", "C1", "Eins", "Acme")
	in := r.ingest12(replDSN(), "--server-id", r.serverID12())
	r.waitSnapshot(in, 30*time.Second)
	r.waitRecord(in, "C1", "Eins|Acme|[]")
	in.kill()
	r.exec("UPDATE `"+r.table+"` SET name = ? WHERE id = ?", "Eins neu", "C1")
	r.exec("ALTER TABLE `" + r.table + "` MODIFY name VARCHAR(256) NOT NULL AFTER brand")
	in = r.ingest12(replDSN(), "--server-id", r.serverID12())
	waitStopped(t, in, "rows written before a column swap, without names", "in the order (id, name, brand)")
	if got := r.record("C1"); got != "Eins|Acme|[]" && got != "Eins neu|Acme|[]" {
		t.Errorf("C1 is %q: the row written before the swap was mapped by the order after it", got)
	}
}
