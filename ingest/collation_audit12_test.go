package ingest_test

import "testing"

// TestAudit12CollationsOfMariaDB1010: MariaDB 10.10 and later list their
// UCA 14.0.0 collations (utf8mb4_uca1400_ai_ci, id 2304, the default of
// 11.x) in information_schema.COLLATIONS without an id, and with it only
// in COLLATION_CHARACTER_SET_APPLICABILITY: the ingester stopped at the
// first row event of a table with such a column ("collation 2304, which
// the source does not list").
func TestAudit12CollationsOfMariaDB1010(t *testing.T) {
	r := newRig(t, "id VARCHAR(64) PRIMARY KEY, name VARCHAR(256) COLLATE utf8mb4_uca1400_ai_ci NOT NULL, brand VARCHAR(256) CHARACTER SET latin1 COLLATE latin1_german2_ci NOT NULL", "")
	r.exec("INSERT INTO `"+r.table+"` VALUES (?,?,?)", "U1", "Größe", "Über")
	in := r.ingest12(replDSN(), "--server-id", r.serverID12())
	r.waitRecord(in, "U1", "Größe|Über|[]")
	r.exec("INSERT INTO `"+r.table+"` VALUES (?,?,?)", "U2", "Straße", "Öl")
	r.exec("UPDATE `"+r.table+"` SET name = ? WHERE id = ?", "Größer", "U1")
	r.waitRecord(in, "U2", "Straße|Öl|[]")
	r.waitRecord(in, "U1", "Größer|Über|[]")
}
