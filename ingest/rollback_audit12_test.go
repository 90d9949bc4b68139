package ingest_test

import (
	"testing"
)

// A transaction that also changes a non-transactional table (MyISAM) and
// rolls back, wholly or to a savepoint, reaches the binary log with the
// rows it rolled back, then ROLLBACK or ROLLBACK TO SAVEPOINT: the source's
// replicas apply them and take them back. The ingester applied them and
// took nothing back: the catalog held rows the table never had.

// rollbackRig is a rig whose table has a MyISAM table beside it, and an
// ingester following it that has the snapshot's row K0.
func rollbackRig(t *testing.T) (r *rig, side string) {
	r = newRig(t, columns12, "")
	side = r.table + "_m"
	r.exec("CREATE TABLE `" + side + "` (id INT PRIMARY KEY) ENGINE=MyISAM")
	t.Cleanup(func() { r.db.Exec("DROP TABLE IF EXISTS `" + side + "`") })
	r.exec("INSERT INTO `"+r.table+"` VALUES (?,?,?)", "K0", "Null", "Acme")
	return r, side
}

// runTx runs statements on one connection.
func runTx(t *testing.T, r *rig, statements ...string) {
	t.Helper()
	conn, err := r.db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, q := range statements {
		if _, err := conn.ExecContext(t.Context(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// TestAudit12RolledBackRowsAreNotApplied: rows rolled back (to a savepoint
// MariaDB writes to the binary log, or to one it does not, which it writes
// as ROLLBACK) leave the catalog as it was; the rows committed with them
// are applied.
func TestAudit12RolledBackRowsAreNotApplied(t *testing.T) {
	r, side := rollbackRig(t)
	in := r.ingest12(replDSN(), "--server-id", r.serverID12())
	r.waitRecord(in, "K0", "Null|Acme|[]")
	tbl := "`" + r.table + "`"
	// The savepoint comes before anything is written: MariaDB writes the
	// rows up to the ROLLBACK TO, then ROLLBACK, then the rest as a
	// transaction of its own.
	runTx(t, r, "BEGIN", "SAVEPOINT s0", "INSERT INTO `"+side+"` VALUES (1)",
		"INSERT INTO "+tbl+" VALUES ('K1', 'Eins', 'Acme')", "ROLLBACK TO SAVEPOINT s0",
		"INSERT INTO "+tbl+" VALUES ('K2', 'Zwei', 'Acme')", "COMMIT")
	// Savepoints after rows: SAVEPOINT and ROLLBACK TO are written.
	runTx(t, r, "BEGIN", "INSERT INTO "+tbl+" VALUES ('K3', 'Drei', 'Acme')", "SAVEPOINT s1",
		"INSERT INTO "+tbl+" VALUES ('K4', 'Vier', 'Acme')", "SAVEPOINT s2", "INSERT INTO `"+side+"` VALUES (2)",
		"UPDATE "+tbl+" SET name = 'Null neu' WHERE id = 'K0'", "ROLLBACK TO s1",
		"INSERT INTO "+tbl+" VALUES ('K5', 'Fünf', 'Acme')", "COMMIT")
	r.exec("INSERT INTO " + tbl + " VALUES ('K9', 'Ende', 'Acme')")
	r.waitRecord(in, "K9", "Ende|Acme|[]")
	for sku, want := range map[string]string{
		"K0": "Null|Acme|[]", "K1": "none", "K2": "Zwei|Acme|[]", "K3": "Drei|Acme|[]", "K4": "none", "K5": "Fünf|Acme|[]",
	} {
		if got := r.record(sku); got != want {
			t.Errorf("%s is %q in the catalog, want %q", sku, got, want)
		}
	}
	select {
	case <-in.done:
		t.Errorf("the ingester stopped; its log:\n%s", in.logText())
	default:
	}
	if t.Failed() {
		t.Logf("ingester log:\n%s", in.logText())
	}
}
