package ingest_test

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"allot/client"
	"allot/store"
	"allot/store/remote"
)

// rig is one consistency test's setup: a source table of its own in the
// project's MariaDB, an allot server, and the flags of an ingester that
// follows the table into it.
type rig struct {
	t       *testing.T
	db      *sql.DB
	bin     string
	table   string
	dir     string
	state   string
	allot   *remote.Process
	c       *client.Client
	stamp   int64
	allotUp []string // extra flags of allot serve
}

// newRig creates a table with the given column definitions and table
// options and starts allot with the extra serve flags.
func newRig(t *testing.T, columns, options string, serveFlags ...string) *rig {
	t.Helper()
	bin, _, db := mariaDBSource(t, 3*time.Minute)
	stamp := time.Now().UnixNano()
	r := &rig{t: t, db: db, bin: bin, table: fmt.Sprintf("ingest_cons_%d", stamp), dir: t.TempDir(), stamp: stamp, allotUp: serveFlags}
	r.state = filepath.Join(r.dir, "state.json")
	r.exec("CREATE TABLE `" + r.table + "` (" + columns + ") ENGINE=InnoDB " + options)
	t.Cleanup(func() { db.Exec("DROP TABLE IF EXISTS `" + r.table + "`") })
	r.startAllot("")
	var err error
	if r.c, err = client.New(client.Config{Addr: r.allot.Addr(), PoolSize: 1}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.c.Close() })
	return r
}

// startAllot starts allot on its data dir; addr "" takes a free port.
func (r *rig) startAllot(addr string) {
	r.t.Helper()
	extra := append([]string{}, r.allotUp...)
	if addr != "" {
		extra = append(extra, "--resp", addr)
	}
	p, err := remote.StartProcess(r.t.Context(), r.bin, store.Config{DataDir: filepath.Join(r.dir, "data"), Durability: store.DurabilityFsync}, extra...)
	if err != nil {
		r.t.Fatal(err)
	}
	r.allot = p
	r.t.Cleanup(func() { p.Stop(30 * time.Second) })
}

func (r *rig) exec(q string, args ...any) {
	r.t.Helper()
	if _, err := r.db.ExecContext(r.t.Context(), q, args...); err != nil {
		r.t.Fatalf("%s: %v", q, err)
	}
}

// ingest starts `allot ingest mysql` on the table with the columns id,
// name, brand and the attributes given.
func (r *rig) ingest(attributes string) *ingester {
	r.t.Helper()
	in := binaryIngester(r.bin)(r.t, "--dsn", replDSN(), "--table", r.table, "--sku", "id", "--title", "name", "--brand", "brand",
		"--attributes", attributes, "--addr", r.allot.Addr(), "--state", r.state, "--metrics", "",
		"--server-id", fmt.Sprint(400000+r.stamp/1000%1000000), "--checkpoint-every", "100ms")
	r.t.Cleanup(in.kill)
	return in
}

// record renders the catalog's record of sku as title|brand|attributes,
// or "none".
func (r *rig) record(sku string) string {
	rec, found, err := r.c.CatalogGet(r.t.Context(), sku)
	if err != nil {
		return fmt.Sprintf("error (%v)", err)
	}
	if !found {
		return "none"
	}
	return fmt.Sprintf("%s|%s|%v", rec.Title, rec.Brand, rec.Attributes)
}

// waitRecord waits up to 10 s for sku's record to be want.
func (r *rig) waitRecord(in *ingester, sku, want string) {
	r.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := r.record(sku)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("sku %s is %q in the catalog, want %q; ingester log:\n%s", sku, got, want, in.logText())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitSnapshot waits up to limit for in to write its checkpoint.
func (r *rig) waitSnapshot(in *ingester, limit time.Duration) {
	r.t.Helper()
	deadline := time.Now().Add(limit)
	for {
		if cp, err := os.ReadFile(r.state); err == nil && !strings.Contains(string(cp), "incomplete") {
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("the snapshot did not finish within %v; ingester log:\n%s", limit, in.logText())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestIngestSnapshotCrashLeavesNoDeletedRows: the ingester is killed in
// the middle of its first snapshot, after it set some records, and rows it
// had set are deleted (one row's SKU is changed) before it is started
// again. The second start repeats the snapshot; the deleted rows and the
// old SKU must not stay in the catalog, though the new snapshot no longer
// has them and the binary log it follows starts after their deletion.
func TestIngestSnapshotCrashLeavesNoDeletedRows(t *testing.T) {
	r := newRig(t, "id VARCHAR(64) PRIMARY KEY, name VARCHAR(256) NOT NULL, brand VARCHAR(256) NOT NULL", "")
	const rows = 20000
	for from := 0; from < rows; from += 5000 {
		var vals []string
		var args []any
		for i := from; i < from+5000; i++ {
			vals = append(vals, "(?,?,?)")
			args = append(args, fmt.Sprintf("P%05d", i), fmt.Sprintf("Artikel %d", i), "Acme")
		}
		r.exec("INSERT INTO `"+r.table+"` VALUES "+strings.Join(vals, ","), args...)
	}

	in := r.ingest("")
	// The first records are in: allot is killed, so that the snapshot
	// stalls retrying, and the ingester with it, before it finished.
	deadline := time.Now().Add(30 * time.Second)
	var set []string
	for len(set) < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("no snapshot record in allot after 30s; ingester log:\n%s", in.logText())
		}
		set = set[:0]
		for i := range 50 { // the snapshot reads in key order
			if sku := fmt.Sprintf("P%05d", i); r.record(sku) != "none" {
				set = append(set, sku)
				if len(set) == 3 {
					break
				}
			}
		}
	}
	addr := r.allot.Addr()
	r.allot.Kill()
	in.kill()
	if cp, err := os.ReadFile(r.state); err == nil && !strings.Contains(string(cp), "incomplete") {
		t.Fatalf("the snapshot finished before the kill (state %s exists): the test needs a slower snapshot", r.state)
	}
	r.exec("DELETE FROM `"+r.table+"` WHERE id IN (?,?)", set[0], set[1])
	r.exec("UPDATE `"+r.table+"` SET id = ? WHERE id = ?", "MOVED", set[2])

	r.startAllot(addr)
	in = r.ingest("")
	r.waitSnapshot(in, time.Minute)
	var moved int
	fmt.Sscanf(set[2], "P%d", &moved)
	r.waitRecord(in, "MOVED", fmt.Sprintf("Artikel %d|Acme|[]", moved))
	r.waitRecord(in, fmt.Sprintf("P%05d", rows-1), fmt.Sprintf("Artikel %d|Acme|[]", rows-1))
	deadline = time.Now().Add(10 * time.Second)
	for _, sku := range set {
		for r.record(sku) != "none" {
			if time.Now().After(deadline) {
				t.Fatalf("sku %s was deleted from the table during the interrupted snapshot, but the catalog still has it (%s); ingester log:\n%s", sku, r.record(sku), in.logText())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// TestIngestRejectedUpdateLeavesNoStaleRecord: a row allot cannot hold
// (a title over 256 bytes, a control character, a NULL brand) replaces a
// row it held. The catalog must not go on showing the old title for the
// SKU as if the row were unchanged.
func TestIngestRejectedUpdateLeavesNoStaleRecord(t *testing.T) {
	r := newRig(t, "id VARCHAR(64) PRIMARY KEY, name VARCHAR(512), brand VARCHAR(256)", "")
	r.exec("INSERT INTO `"+r.table+"` VALUES (?,?,?),(?,?,?),(?,?,?)", "L1", "Lang", "Acme", "C1", "Steuer", "Acme", "N1", "Ohne Marke", "Acme")
	in := r.ingest("")
	r.waitRecord(in, "N1", "Ohne Marke|Acme|[]")
	r.exec("UPDATE `"+r.table+"` SET name = ? WHERE id = ?", strings.Repeat("x", 300), "L1")
	r.exec("UPDATE `"+r.table+"` SET name = ? WHERE id = ?", "Steuer\tzeichen", "C1")
	r.exec("UPDATE `"+r.table+"` SET brand = NULL WHERE id = ?", "N1")
	r.exec("INSERT INTO `"+r.table+"` VALUES (?,?,?)", "DONE", "Fertig", "Acme")
	r.waitRecord(in, "DONE", "Fertig|Acme|[]")
	for _, sku := range []string{"L1", "C1", "N1"} {
		if got := r.record(sku); got != "none" {
			t.Errorf("sku %s: the table's row can no longer be a record, but the catalog still shows the old one: %s", sku, got)
		}
	}
}

// TestIngestRefusedConnectionIsNotARejectedRow: allot refuses a
// connection over its limit with "-ERR max number of clients reached".
// That is no verdict on the row: the ingester must retry, not skip the
// row as invalid and leave it out of the catalog for good.
func TestIngestRefusedConnectionIsNotARejectedRow(t *testing.T) {
	r := newRig(t, "id VARCHAR(64) PRIMARY KEY, name VARCHAR(256) NOT NULL, brand VARCHAR(256) NOT NULL", "", "--connections-max", "3")
	const rows = 200
	var vals []string
	var args []any
	for i := range rows {
		vals = append(vals, "(?,?,?)")
		args = append(args, fmt.Sprintf("P%04d", i), fmt.Sprintf("Artikel %d", i), "Acme")
	}
	r.exec("INSERT INTO `"+r.table+"` VALUES "+strings.Join(vals, ","), args...)
	in := r.ingest("")
	r.waitSnapshot(in, 30*time.Second)
	// The ingester's connections end, so that the test's own is not
	// refused.
	in.kill()
	// The server may not have seen the ingester's connections close yet.
	deadline := time.Now().Add(10 * time.Second)
	for r.record("P0000") != "Artikel 0|Acme|[]" && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	var missing []string
	for i := range rows {
		if sku := fmt.Sprintf("P%04d", i); r.record(sku) != fmt.Sprintf("Artikel %d|Acme|[]", i) {
			missing = append(missing, sku+" ("+r.record(sku)+")")
		}
	}
	if len(missing) > 0 {
		t.Errorf("%d of %d rows are not in the catalog after the snapshot (first %s); ingester log:\n%.2000s", len(missing), rows, missing[0], in.logText())
	}
}

// TestIngestEnumAndSetColumns: ENUM and SET columns (a colour, sizes) read
// the same from the binary log as from the snapshot: by their names, not
// by the index or bit mask the binary log stores.
func TestIngestEnumAndSetColumns(t *testing.T) {
	r := newRig(t, "id VARCHAR(64) PRIMARY KEY, name VARCHAR(256) NOT NULL, brand ENUM('Acme','Über') NOT NULL, colour ENUM('red','green','blue') NOT NULL, sizes SET('S','M','L')", "")
	r.exec("INSERT INTO `"+r.table+"` VALUES (?,?,?,?,?)", "E1", "Hemd", "Acme", "red", "S,L")
	in := r.ingest("colour,sizes")
	r.waitRecord(in, "E1", "Hemd|Acme|[{colour red} {sizes S,L}]")
	r.exec("UPDATE `"+r.table+"` SET brand = ?, colour = ?, sizes = ? WHERE id = ?", "Über", "blue", "M,L", "E1")
	r.waitRecord(in, "E1", "Hemd|Über|[{colour blue} {sizes M,L}]")
}

// TestIngestLatin1Table: a table in latin1 (a shop's old catalog) holds
// "Größe" as latin1 bytes; the snapshot reads it converted to UTF-8 by
// the server, and the binary log carries the latin1 bytes, which the
// ingester must convert the same way.
func TestIngestLatin1Table(t *testing.T) {
	r := newRig(t, "id VARCHAR(64) PRIMARY KEY, name VARCHAR(256) NOT NULL, brand VARCHAR(256) NOT NULL, colour VARCHAR(64) NOT NULL", "DEFAULT CHARSET=latin1")
	r.exec("INSERT INTO `"+r.table+"` VALUES (?,?,?,?)", "G1", "Größe eins", "Über", "grün")
	in := r.ingest("colour")
	r.waitRecord(in, "G1", "Größe eins|Über|[{colour grün}]")
	r.exec("UPDATE `"+r.table+"` SET name = ?, colour = ? WHERE id = ?", "Größe zwei €", "weiß", "G1")
	r.exec("INSERT INTO `"+r.table+"` VALUES (?,?,?,?)", "G2", "Straße", "Über", "rot")
	r.waitRecord(in, "G2", "Straße|Über|[{colour rot}]")
	r.waitRecord(in, "G1", "Größe zwei €|Über|[{colour weiß}]")
}

// TestIngestStopsOnPartialRowImages: a session that writes partial row
// images (binlog_row_image=MINIMAL, a setting any writer may make for its
// own session) leaves the columns it did not change out of the binary log.
// The ingester cannot know them: it must stop and say why, not store a
// record with empty fields or drop the SKU's record.
func TestIngestStopsOnPartialRowImages(t *testing.T) {
	r := newRig(t, "id VARCHAR(64) PRIMARY KEY, name VARCHAR(256) NOT NULL, brand VARCHAR(256) NOT NULL", "")
	r.exec("INSERT INTO `"+r.table+"` VALUES (?,?,?)", "M1", "Mantel", "Acme")
	in := r.ingest("")
	r.waitRecord(in, "M1", "Mantel|Acme|[]")
	conn, err := r.db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(t.Context(), "SET SESSION binlog_row_image = 'MINIMAL'"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(t.Context(), "UPDATE `"+r.table+"` SET name = ? WHERE id = ?", "Mantel neu", "M1"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-in.done:
	case <-time.After(10 * time.Second):
		t.Fatalf("the ingester went on after a partial row image; M1 is %q; its log:\n%s", r.record("M1"), in.logText())
	}
	if !strings.Contains(in.logText(), "binlog_row_image") {
		t.Errorf("the ingester stopped without naming binlog_row_image; its log:\n%s", in.logText())
	}
	if got := r.record("M1"); got != "Mantel|Acme|[]" {
		t.Errorf("M1 is %q after the partial row image, want the last full one", got)
	}
}

// TestIngestFollowsRotationAndIgnoresOtherDatabases: the binary log
// rotates (FLUSH BINARY LOGS) under a running ingester and again while it
// is down, and a table of the same name in another database changes: the
// catalog follows the table across the rotations and takes nothing from
// the other database's table.
func TestIngestFollowsRotationAndIgnoresOtherDatabases(t *testing.T) {
	r := newRig(t, "id VARCHAR(64) PRIMARY KEY, name VARCHAR(256) NOT NULL, brand VARCHAR(256) NOT NULL", "")
	other := fmt.Sprintf("ingest_other_%d", r.stamp)
	r.exec("CREATE DATABASE `" + other + "`")
	t.Cleanup(func() { r.db.Exec("DROP DATABASE IF EXISTS `" + other + "`") })
	r.exec("CREATE TABLE `" + other + "`.`" + r.table + "` (id VARCHAR(64) PRIMARY KEY, name VARCHAR(256) NOT NULL, brand VARCHAR(256) NOT NULL)")
	r.exec("INSERT INTO `"+r.table+"` VALUES (?,?,?)", "R1", "Eins", "Acme")
	in := r.ingest("")
	r.waitSnapshot(in, 30*time.Second)
	r.exec("INSERT INTO `"+other+"`.`"+r.table+"` VALUES (?,?,?)", "X1", "Fremd", "Acme")
	r.exec("FLUSH BINARY LOGS")
	r.exec("UPDATE `"+r.table+"` SET name = ? WHERE id = ?", "Eins neu", "R1")
	r.waitRecord(in, "R1", "Eins neu|Acme|[]")
	in.kill()
	r.exec("UPDATE `"+r.table+"` SET name = ? WHERE id = ?", "Eins unten", "R1")
	r.exec("FLUSH BINARY LOGS")
	r.exec("INSERT INTO `"+r.table+"` VALUES (?,?,?)", "R2", "Zwei", "Acme")
	r.exec("DELETE FROM `"+other+"`.`"+r.table+"` WHERE id = ?", "X1")
	r.exec("INSERT INTO `"+other+"`.`"+r.table+"` VALUES (?,?,?)", "R1", "Fremd", "Acme")
	in = r.ingest("")
	r.waitRecord(in, "R2", "Zwei|Acme|[]")
	r.waitRecord(in, "R1", "Eins unten|Acme|[]")
	if got := r.record("X1"); got != "none" {
		t.Errorf("X1, a row of %s.%s, is in the catalog: %s", other, r.table, got)
	}
}
