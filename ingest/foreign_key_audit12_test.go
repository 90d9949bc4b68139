package ingest_test

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestAudit12WarnsOfCascadingForeignKeys: the source applies a foreign
// key's ON DELETE / ON UPDATE CASCADE, SET NULL or SET DEFAULT to the
// child table's rows without writing them to the binary log. An ingester
// following such a child table keeps records of rows the source deleted
// that way, and it said nothing of it: it warns at start, naming the
// constraint.
func TestAudit12WarnsOfCascadingForeignKeys(t *testing.T) {
	_, ctx, db := mariaDBSource(t, time.Minute)
	parent := fmt.Sprintf("ingest_maker12_%d", time.Now().UnixNano())
	if _, err := db.ExecContext(ctx, "CREATE TABLE `"+parent+"` (id INT PRIMARY KEY) ENGINE=InnoDB"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Exec("DROP TABLE IF EXISTS `" + parent + "`") })
	if _, err := db.ExecContext(ctx, "INSERT INTO `"+parent+"` VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	r := newRig(t, columns12+", maker INT NULL, CONSTRAINT `fk_audit12_maker` FOREIGN KEY (maker) REFERENCES `"+parent+"` (id) ON DELETE CASCADE", "")
	r.exec("INSERT INTO `"+r.table+"` VALUES (?,?,?,?)", "F1", "Eins", "Acme", 1)
	in := r.ingest12(replDSN(), "--server-id", r.serverID12())
	r.waitRecord(in, "F1", "Eins|Acme|[]")
	if log := in.logText(); !strings.Contains(log, "fk_audit12_maker") || !strings.Contains(log, "CASCADE") {
		t.Errorf("the ingester did not warn of the cascading foreign key fk_audit12_maker:\n%s", log)
	}
	// What the warning is about: the cascade's delete is not in the
	// binary log, and the record stays.
	r.exec("DELETE FROM `" + parent + "` WHERE id = 1")
	r.exec("INSERT INTO `"+r.table+"` VALUES (?,?,?,?)", "F2", "Zwei", "Acme", nil)
	r.waitRecord(in, "F2", "Zwei|Acme|[]")
	t.Logf("after the parent row's delete cascaded, F1 is %q in the catalog", r.record("F1"))
}
