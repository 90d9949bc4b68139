package ingest_test

import (
	"fmt"
	"testing"
	"time"
)

// TestAudit15UnmappedColumnInAnotherCharset: a column the ingester does
// not map (no --title, --brand or --attributes names it) in a character
// set it does not convert (tis620, armscii8, ...), a string or an ENUM, is
// no part of any record, and the snapshot never reads it. The binary log's rows carry it all the
// same, and the ingester converted every column of a row: the first row
// event stopped it ("character set tis620 is not one the ingester converts
// to UTF-8"), and so did the first table map that carried the ENUM's
// members: the table was not followed at all.
func TestAudit15UnmappedColumnInAnotherCharset(t *testing.T) {
	r, dsn := newRig15(t, "id VARCHAR(64) PRIMARY KEY, name VARCHAR(256), brand VARCHAR(256), note VARCHAR(64) CHARACTER SET tis620, "+
		"kind ENUM('a','b') CHARACTER SET tis620")
	tbl := "`" + r.table + "`"
	r.exec("INSERT INTO " + tbl + " VALUES ('S1', 'Eins', 'Acme', 'x', 'a')")
	in := r.ingest12(dsn, "--server-id", fmt.Sprint(1_990_000+r.stamp/1000%9_000))
	r.waitSnapshot(in, 30*time.Second)
	r.waitRecord(in, "S1", "Eins|Acme|[]")
	r.exec("UPDATE " + tbl + " SET name = 'Eins neu', note = 'y' WHERE id = 'S1'")
	r.exec("INSERT INTO " + tbl + " VALUES ('S2', 'Zwei', 'Acme', 'z', 'b')")
	r.waitRecord(in, "S2", "Zwei|Acme|[]")
	r.waitRecord(in, "S1", "Eins neu|Acme|[]")
}
