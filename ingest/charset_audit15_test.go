package ingest_test

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"allot/catalog"
	"allot/client"
)

// The fifteenth audit's ingest tests use a database of their own
// (audit15_<stamp>), followed through a DSN that names it.

// newRig15 creates database audit15_<stamp> with table products (the
// columns given) and starts allot; dsn is the replication user's DSN of
// that database.
func newRig15(t *testing.T, columns string) (r *rig, dsn string) {
	t.Helper()
	bin, _, db := mariaDBSource(t, 3*time.Minute)
	stamp := time.Now().UnixNano()
	name := fmt.Sprintf("audit15_%d", stamp)
	if _, err := db.Exec("CREATE DATABASE `" + name + "`"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Exec("DROP DATABASE IF EXISTS `" + name + "`") })
	own, err := sql.Open("mysql", strings.Replace(replaceDatabase(replDSN(), name), "allot_repl:allot_repl@", "allot:allot@", 1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { own.Close() })
	r = &rig{t: t, db: own, bin: bin, table: "products", dir: t.TempDir(), stamp: stamp}
	r.state = filepath.Join(r.dir, "state.json")
	r.exec("CREATE TABLE `" + r.table + "` (" + columns + ") ENGINE=InnoDB")
	r.startAllot("")
	if r.c, err = client.New(client.Config{Addr: r.allot.Addr(), PoolSize: 1}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.c.Close() })
	return r, replaceDatabase(replDSN(), name)
}

// replaceDatabase returns dsn naming database name instead of its own.
func replaceDatabase(dsn, name string) string {
	at := strings.LastIndex(dsn, "/")
	rest := ""
	if q := strings.IndexByte(dsn[at:], '?'); q >= 0 {
		rest = dsn[at+q:]
	}
	return dsn[:at+1] + name + rest
}

// TestAudit15SingleByteCharsetsReadAsTheSourceConvertsThem: a string of a
// single-byte character set arrives from the binary log as its bytes,
// which the ingester converted with Go's tables, while the snapshot reads
// what the source converts them to: the two differ where the source's
// table differs from Go's. latin1's 0x81, 0x8D, 0x8F, 0x90 and 0x9D are
// U+0081.. (C1 controls: a row the catalog cannot hold) to MariaDB and
// U+FFFD to Go, so the snapshot refused the row and the binary log stored
// it with a replacement character; greek's 0xA1 is U+02BD to MariaDB and
// U+2018 to Go, koi8u's 0xAE U+255D and U+045E, cp1256's 0x8A '?' and
// U+0679, so one row had two records. The README: "strings in any common
// character set (latin1 included) as UTF-8, the same from the binary log
// as from the snapshot".
func TestAudit15SingleByteCharsetsReadAsTheSourceConvertsThem(t *testing.T) {
	r, dsn := newRig15(t, "id VARCHAR(64) PRIMARY KEY, name VARCHAR(256) CHARACTER SET latin1, brand VARCHAR(256) CHARACTER SET greek, "+
		"k VARCHAR(64) CHARACTER SET koi8u, a VARCHAR(64) CHARACTER SET cp1256")
	tbl := "`" + r.table + "`"
	// name, brand, k, a as hex literals of each column's character set.
	rows := map[string][4]string{
		"ok":      {"_latin1 0x4b6166666565", "_greek 0xa1416c706861", "_koi8u 0xae", "_cp1256 0x8a"},
		"control": {"_latin1 0x436166e981", "_greek 0x41", "_koi8u 0x41", "_cp1256 0x41"},
	}
	insert := func(prefix string) {
		for sku, v := range rows {
			r.exec(fmt.Sprintf("INSERT INTO %s VALUES ('%s%s', %s, %s, %s, %s)", tbl, prefix, sku, v[0], v[1], v[2], v[3]))
		}
	}
	insert("snapshot-")
	in := r.ingest12(dsn, "--server-id", fmt.Sprint(1_900_000+r.stamp/1000%100_000), "--attributes", "k,a")
	r.waitSnapshot(in, 30*time.Second)
	insert("binlog-")
	r.exec("INSERT INTO " + tbl + " VALUES ('end', 'Ende', 'Acme', '', '')")
	r.waitRecord(in, "end", "Ende|Acme|[{a } {k }]")
	for sku := range rows {
		server := serverText(t, r.db, "SELECT name, brand, a, k FROM "+tbl+" WHERE id = 'snapshot-"+sku+"'", "a", "k")
		want := server
		if sku == "control" {
			want = "none" // U+0081 is a control character
		}
		snap, bin := r.record("snapshot-"+sku), r.record("binlog-"+sku)
		if snap != want || bin != want {
			t.Errorf("row %s: the server reads %+q; the catalog has %+q from the snapshot, %+q from the binary log, want %+q for both", sku, server, snap, bin, want)
		}
	}
}

// tableRecords reads the table (columns id, name, brand and attrs) as the
// catalog should hold it, by the server's text of each value: SKU ->
// title|brand|attributes, leaving out rows the catalog cannot hold.
func (r *rig) tableRecords(attrs ...string) map[string]string {
	r.t.Helper()
	cols := append([]string{"id", "name", "brand"}, attrs...)
	for i, c := range cols {
		cols[i] = "CAST(`" + c + "` AS CHAR)"
	}
	rows, err := r.db.Query("SELECT " + strings.Join(cols, ", ") + " FROM `" + r.table + "`")
	if err != nil {
		r.t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			r.t.Fatal(err)
		}
		rec := catalog.Record{SKU: vals[0].String, Title: vals[1].String, Brand: vals[2].String}
		for i, a := range attrs {
			rec.Attributes = append(rec.Attributes, catalog.Attribute{Name: a, Value: vals[3+i].String})
		}
		rec.Normalize()
		if rec.Check() == "" {
			out[rec.SKU] = fmt.Sprintf("%s|%s|%v", rec.Title, rec.Brand, rec.Attributes)
		}
	}
	if err := rows.Err(); err != nil {
		r.t.Fatal(err)
	}
	return out
}
