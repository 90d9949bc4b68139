package ingest_test

import (
	"fmt"
	"testing"
	"time"
)

// TestAudit15UUIDSKUFromTheBinlog: MariaDB's UUID type (10.7 and later), a
// common primary key, is printed by the server as text
// (123e4567-e89b-12d3-a456-426614174000), which the snapshot reads, and
// written to the binary log as its 16 bytes, trailing zero bytes left out.
// The ingester sent those bytes as the SKU, which allot cannot hold: every
// insert, update and delete of the table after the snapshot was skipped
// ("sku contains a control character"), and the snapshot's records stayed
// as they were, rows deleted included.
func TestAudit15UUIDSKUFromTheBinlog(t *testing.T) {
	r, dsn := newRig15(t, "id UUID PRIMARY KEY, name VARCHAR(256), brand VARCHAR(256), ref UUID")
	tbl := "`" + r.table + "`"
	const (
		kept    = "123e4567-e89b-12d3-a456-426614174000" // version 1, ends in a zero byte
		deleted = "00112233-4455-6677-8899-aabbccddeeff"
	)
	r.exec("INSERT INTO "+tbl+" VALUES (?, 'Eins', 'Acme', ?), (?, 'Zwei', 'Acme', NULL)", kept, deleted, deleted)
	in := r.ingest12(dsn, "--server-id", fmt.Sprint(1_950_000+r.stamp/1000%40_000), "--attributes", "ref")
	r.waitSnapshot(in, 30*time.Second)
	r.waitRecord(in, kept, "Eins|Acme|[{ref "+deleted+"}]")
	r.exec("UPDATE "+tbl+" SET name = 'Eins neu', ref = ? WHERE id = ?", "ffffffff-ffff-4fff-bfff-ffffffffff00", kept)
	r.exec("DELETE FROM "+tbl+" WHERE id = ?", deleted)
	r.exec("INSERT INTO "+tbl+" VALUES (?, 'Drei', 'Acme', NULL), (UUID(), 'Vier', 'Acme', NULL), ('00000000-0000-0000-0000-000000000000', 'Null', 'Acme', NULL)",
		"f81d4fae-7dec-11d0-a765-00a0c91e6bf6")
	r.exec("UPDATE "+tbl+" SET id = ? WHERE name = 'Drei'", "f81d4fae-7dec-41d0-e765-00a0c91e6b00")
	r.exec("INSERT INTO " + tbl + " VALUES ('99999999-9999-9999-9999-999999999999', 'Ende', 'Acme', NULL)")
	deadline := time.Now().Add(10 * time.Second)
	for r.record("99999999-9999-9999-9999-999999999999") == "none" && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	want := r.tableRecords("ref")
	for sku, w := range want {
		if got := r.record(sku); got != w {
			t.Errorf("%s is %q in the catalog, want %q as the table has it", sku, got, w)
		}
	}
	for _, sku := range []string{deleted, "f81d4fae-7dec-11d0-a765-00a0c91e6bf6"} {
		if got := r.record(sku); got != "none" {
			t.Errorf("%s, no longer in the table, is %q in the catalog", sku, got)
		}
	}
	if t.Failed() {
		t.Logf("ingester log:\n%s", in.logText())
	}
}

// TestAudit15UUIDColumnAlteredToText: types are read at start, and an
// ALTER TABLE is followed (the binary log carries the columns' names), so
// a UUID column made a VARCHAR while the ingester runs kept the UUID
// rendering: "abc" arrived as 61626300-0000-0000-0000-000000000000. The
// table map's own type (a UUID is a fixed binary string there) decides.
func TestAudit15UUIDColumnAlteredToText(t *testing.T) {
	r, dsn := newRig15(t, "id VARCHAR(64) PRIMARY KEY, name VARCHAR(256), brand VARCHAR(256), ref UUID")
	tbl := "`" + r.table + "`"
	r.exec("INSERT INTO "+tbl+" VALUES ('A1', 'Eins', 'Acme', ?)", "00112233-4455-6677-8899-aabbccddeeff")
	in := r.ingest12(dsn, "--server-id", fmt.Sprint(1_990_000+r.stamp/1000%9_000), "--attributes", "ref")
	r.waitSnapshot(in, 30*time.Second)
	r.waitRecord(in, "A1", "Eins|Acme|[{ref 00112233-4455-6677-8899-aabbccddeeff}]")
	r.exec("ALTER TABLE " + tbl + " MODIFY ref VARCHAR(64)")
	r.exec("UPDATE " + tbl + " SET ref = 'abc' WHERE id = 'A1'")
	r.waitRecord(in, "A1", "Eins|Acme|[{ref abc}]")
}
