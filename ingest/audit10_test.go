package ingest_test

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"math/rand"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/siddontang/go-log/log"

	"allot/ingest"
	"allot/services"
)

// The faults of the tenth audit of `allot ingest mysql`: values the binary
// log carries otherwise than the snapshot reads them (unsigned integers,
// BIT, FLOAT, TIME, TIMESTAMP), and statements that change the table
// without row events that the ingester did not recognise.

// ingestWith starts `allot ingest mysql` on r's table like r.ingest, with
// another DSN and extra environment variables.
func (r *rig) ingestWith(dsn string, env []string, attributes string) *ingester {
	r.t.Helper()
	cmd := exec.Command(r.bin, "ingest", "mysql", "--dsn", dsn, "--table", r.table, "--sku", "id", "--title", "name", "--brand", "brand",
		"--attributes", attributes, "--addr", r.allot.Addr(), "--state", r.state, "--metrics", "",
		"--server-id", fmt.Sprint(500000+r.stamp/1000%1000000), "--checkpoint-every", "100ms")
	cmd.Env = append(os.Environ(), env...)
	in := startIngester(r.t, cmd)
	r.t.Cleanup(in.kill)
	return in
}

// waitStopped waits up to 10 s for in to exit; it fails t if in goes on,
// or stops without saying says.
func waitStopped(t *testing.T, in *ingester, what, says string) {
	t.Helper()
	select {
	case <-in.done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: the ingester went on; its log:\n%s", what, in.logText())
	}
	if !strings.Contains(in.logText(), says) {
		t.Errorf("%s: the ingester stopped without saying %q; its log:\n%s", what, says, in.logText())
	}
}

// serverText reads query's single row as the server prints it (the text
// protocol: no arguments), joined as title|brand|[{name value} ...] like
// rig.record (attributes by name), the first two columns being the title and the brand and the
// others the attributes named.
func serverText(t *testing.T, db *sql.DB, query string, attributes ...string) string {
	t.Helper()
	rows, err := db.Query(query)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	defer rows.Close()
	if !rows.Next() {
		t.Fatalf("%s: no row (%v)", query, rows.Err())
	}
	vals := make([]sql.NullString, 2+len(attributes))
	ptrs := make([]any, len(vals))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	var attrs []string
	for i, a := range attributes {
		attrs = append(attrs, "{"+a+" "+vals[2+i].String+"}")
	}
	sort.Strings(attrs) // a record holds its attributes by name
	return vals[0].String + "|" + vals[1].String + "|[" + strings.Join(attrs, " ") + "]"
}

// TestAudit10UnsignedIntegersFromTheBinlog: go-mysql decodes the integers
// of a row event signed. An INT UNSIGNED SKU above 2^31 must not become a
// negative SKU when its row is updated (the snapshot's record left stale),
// an update that moves such a SKU must delete the old record, and every
// unsigned width must read as the snapshot reads it (TINYINT UNSIGNED 255,
// not -1).
func TestAudit10UnsignedIntegersFromTheBinlog(t *testing.T) {
	r := newRig(t, "id INT UNSIGNED PRIMARY KEY, name VARCHAR(64) NOT NULL, brand VARCHAR(64) NOT NULL, tu TINYINT UNSIGNED, su SMALLINT UNSIGNED, mu MEDIUMINT UNSIGNED, bu BIGINT UNSIGNED", "")
	r.exec("INSERT INTO `" + r.table + "` VALUES (3000000000,'Hoch','Acme',255,65535,16777215,18446744073709551615), (4000000000,'Umzug','Acme',1,2,3,4)")
	in := r.ingest("tu,su,mu,bu")
	maxAttrs := "[{bu 18446744073709551615} {mu 16777215} {su 65535} {tu 255}]"
	r.waitRecord(in, "3000000000", "Hoch|Acme|"+maxAttrs)
	r.waitRecord(in, "4000000000", "Umzug|Acme|[{bu 4} {mu 3} {su 2} {tu 1}]")

	r.exec("UPDATE `" + r.table + "` SET name = 'Hoch neu' WHERE id = 3000000000")
	r.exec("UPDATE `" + r.table + "` SET id = 4000000001 WHERE id = 4000000000")
	r.exec("INSERT INTO `" + r.table + "` VALUES (4294967295,'Max','Acme',128,32768,8388608,9223372036854775808)")
	r.exec("INSERT INTO `" + r.table + "` VALUES (1,'Fertig','Acme',0,0,0,0)")
	deadline := time.Now().Add(10 * time.Second)
	for r.record("1") == "none" && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	for sku, want := range map[string]string{
		"3000000000":  "Hoch neu|Acme|" + maxAttrs,
		"4000000001":  "Umzug|Acme|[{bu 4} {mu 3} {su 2} {tu 1}]",
		"4294967295":  "Max|Acme|[{bu 9223372036854775808} {mu 8388608} {su 32768} {tu 128}]",
		"1":           "Fertig|Acme|[{bu 0} {mu 0} {su 0} {tu 0}]",
		"4000000000":  "none", // moved to 4000000001
		"-1294967296": "none", // 3000000000 read signed
		"-294967295":  "none", // 4000000001 read signed
		"-1":          "none", // 4294967295 read signed
	} {
		if got := r.record(sku); got != want {
			t.Errorf("sku %s is %q in the catalog, want %q", sku, got, want)
		}
	}
	if t.Failed() {
		t.Logf("ingester log:\n%s", in.logText())
	}
}

// TestAudit10UnsignedWithoutSignednessInTheTableMap: a source that writes
// no signedness in its table maps (binlog_row_metadata=NO_LOG, MariaDB's
// default) leaves the ingester the column types it read at start.
func TestAudit10UnsignedWithoutSignednessInTheTableMap(t *testing.T) {
	tm := &replication.TableMapEvent{
		ColumnCount: 6,
		ColumnType:  []byte{mysql.MYSQL_TYPE_LONG, mysql.MYSQL_TYPE_TINY, mysql.MYSQL_TYPE_SHORT, mysql.MYSQL_TYPE_INT24, mysql.MYSQL_TYPE_LONGLONG, mysql.MYSQL_TYPE_LONG},
		ColumnMeta:  make([]uint16, 6),
	}
	types := []string{"int(10) unsigned", "tinyint(3) unsigned", "smallint(5) unsigned zerofill", "mediumint(8) unsigned", "bigint(20) unsigned", "int(11)"}
	for _, c := range []struct {
		col  int
		v    any
		want string
	}{
		{0, int32(-1294967296), "3000000000"},
		{1, int8(-1), "255"},
		{2, int16(-32768), "32768"},
		{3, int32(-1), "16777215"}, // MEDIUMINT: 24 bits, sign-extended by go-mysql
		{4, int64(-1), "18446744073709551615"},
		{5, int32(-7), "-7"},
	} {
		got, err := ingest.BinlogText(types, tm, c.col, c.v)
		if err != nil || got != c.want {
			t.Errorf("column %d (%s) value %v: %q %v, want %q", c.col+1, types[c.col], c.v, got, err, c.want)
		}
	}
}

// TestAudit10ValuesRenderTheSameFromSnapshotAndBinlog: BIT, DOUBLE, FLOAT
// and TIME columns give the same attribute from the snapshot and from the
// binary log: a BIT as its unsigned decimal value, the others as the
// server prints them (CAST AS CHAR: the driver would parse a number and
// print it its own way). Rows S1... are read by the snapshot; rows B1...
// hold the same values and arrive by the binary log.
func TestAudit10ValuesRenderTheSameFromSnapshotAndBinlog(t *testing.T) {
	r := newRig(t, "id VARCHAR(64) PRIMARY KEY, name VARCHAR(64) NOT NULL, brand VARCHAR(64) NOT NULL, bt BIT(8), b64 BIT(64), d DOUBLE, f FLOAT, tm TIME(2), y YEAR, p DOUBLE(10,2), w FLOAT(7,3)", "")
	values := []string{
		"b'11111111', b'1111111111111111111111111111111111111111111111111111111111111111', 0.1, 3.14159265, '-838:59:59', 2024, 19.9, 1.5",
		"b'00000010', b'100', 1e21, 1e-7, '00:00:00', 1901, 1234567.891, 1234.5678",
		"b'0', b'1000000000000000000000000000000000000000000000000000000000000000', 123456789, 16777217, '12:34:56.7', 0, -0.005, -0.0005",
		"5, 9, -2.5e-300, 1.3e-44, '-00:00:00.01', 2155, 0, 0",
		"NULL, NULL, 1234567, 0.000012345678, '100:00:00', NULL, NULL, NULL",
		"1, 1, 0.30000000000000004, 123456.7, '-1:00:00.5', 1999, 3, 2.25",
	}
	attrs := []string{"bt", "b64", "d", "f", "tm", "y", "p", "w"}
	cols := "name, brand, CAST(bt AS UNSIGNED), CAST(b64 AS UNSIGNED), CAST(d AS CHAR), CAST(f AS CHAR), tm, y, CAST(p AS CHAR), CAST(w AS CHAR)"
	for i, v := range values {
		r.exec(fmt.Sprintf("INSERT INTO `%s` VALUES ('S%d', 'Wert %d', 'Acme', %s)", r.table, i+1, i+1, v))
	}
	in := r.ingest(strings.Join(attrs, ","))
	r.waitSnapshot(in, 30*time.Second)
	for i, v := range values {
		r.exec(fmt.Sprintf("INSERT INTO `%s` VALUES ('B%d', 'Wert %d', 'Acme', %s)", r.table, i+1, i+1, v))
	}
	r.exec("UPDATE `" + r.table + "` SET name = 'Wert 1' WHERE id = 'S1'") // no change: no row event
	r.exec("UPDATE `" + r.table + "` SET name = 'Wert 2 neu' WHERE id = 'S2'")
	r.exec("INSERT INTO `" + r.table + "` (id, name, brand) VALUES ('DONE', 'Fertig', 'Acme')")
	deadline := time.Now().Add(10 * time.Second)
	for r.record("DONE") == "none" && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	for i := range values {
		for _, sku := range []string{fmt.Sprintf("S%d", i+1), fmt.Sprintf("B%d", i+1)} {
			want := serverText(t, r.db, "SELECT "+cols+" FROM `"+r.table+"` WHERE id = '"+sku+"'", attrs...)
			if got := r.record(sku); got != want {
				t.Errorf("sku %s (from the %s) is %q in the catalog, want %q", sku, map[byte]string{'S': "snapshot", 'B': "binary log"}[sku[0]], got, want)
			}
		}
	}
	if t.Failed() {
		t.Logf("ingester log:\n%s", in.logText())
	}
}

// TestAudit10TimestampsInTheSessionTimeZone: a TIMESTAMP reads in the time
// zone of the ingester's session, as its snapshot reads it, whatever the
// ingester process's own zone (TZ); DATETIME, DATE and TIMESTAMP read as
// the server prints them even when the DSN asks the driver to parse times
// (parseTime=true).
func TestAudit10TimestampsInTheSessionTimeZone(t *testing.T) {
	for _, c := range []struct {
		name, params string
	}{
		{"the server's zone", ""},
		{"a session zone and parseTime", "?time_zone=%27%2B05%3A30%27&parseTime=true"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, "id VARCHAR(64) PRIMARY KEY, name VARCHAR(64) NOT NULL, brand VARCHAR(64) NOT NULL, ts TIMESTAMP(3) NULL, dt DATETIME(6) NULL, dd DATE NULL, ts0 TIMESTAMP NULL", "")
			values := []string{
				"'2024-03-05 06:07:08.123', '2024-03-05 06:07:08.5', '2024-03-05', '2024-07-01 23:30:00'",
				"'1970-01-01 00:00:01', '1969-12-31 23:59:59', '0000-00-00', '2038-01-19 03:14:07'",
			}
			attrs := []string{"ts", "dt", "dd", "ts0"}
			for i, v := range values {
				r.exec(fmt.Sprintf("INSERT INTO `%s` VALUES ('S%d', 'Zeit', 'Acme', %s)", r.table, i+1, v))
			}
			in := r.ingestWith(replDSN()+c.params, []string{"TZ=America/New_York"}, strings.Join(attrs, ","))
			r.waitSnapshot(in, 30*time.Second)
			for i, v := range values {
				r.exec(fmt.Sprintf("INSERT INTO `%s` VALUES ('B%d', 'Zeit', 'Acme', %s)", r.table, i+1, v))
			}
			r.exec("INSERT INTO `" + r.table + "` (id, name, brand) VALUES ('DONE', 'Fertig', 'Acme')")
			deadline := time.Now().Add(10 * time.Second)
			for r.record("DONE") == "none" && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			// The server's text in the session the ingester's DSN makes,
			// without the driver's parseTime.
			session, _, _ := strings.Cut(c.params, "&")
			db, err := sql.Open("mysql", services.MariaDBDSN+session)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			for i := range values {
				for _, sku := range []string{fmt.Sprintf("S%d", i+1), fmt.Sprintf("B%d", i+1)} {
					want := serverText(t, db, "SELECT name, brand, ts, dt, dd, ts0 FROM `"+r.table+"` WHERE id = '"+sku+"'", attrs...)
					if got := r.record(sku); got != want {
						t.Errorf("sku %s (from the %s) is %q in the catalog, want %q", sku, map[byte]string{'S': "snapshot", 'B': "binary log"}[sku[0]], got, want)
					}
				}
			}
			if t.Failed() {
				t.Logf("ingester log:\n%s", in.logText())
			}
		})
	}
}

// TestAudit10StatementsThatChangeTheTable: which statements stop an
// ingester following shop.p whose binary log carries column names (an
// ALTER that only changes columns is followed). Every statement that
// renames, replaces or drops the table, or moves rows in or out of it
// without row events, must stop it, however it is written; the others
// must not.
func TestAudit10StatementsThatChangeTheTable(t *testing.T) {
	var drop40 []string
	for i := range 40 {
		drop40 = append(drop40, fmt.Sprintf("`shop`.`t%d`", i))
	}
	stops := []struct{ q, schema string }{
		{"ALTER TABLE p RENAME TO q", "shop"},
		{"ALTER TABLE p RENAME q", "shop"},
		{"alter table `shop`.`p` rename as `shop`.`q`", "other"},
		{"ALTER TABLE p ADD COLUMN x INT, RENAME TO q", "shop"},
		{"ALTER TABLE p WAIT 5 RENAME TO q", "shop"},
		{"ALTER TABLE p ENGINE=InnoDB, RENAME TO shop2.p", "shop"},
		{"/*!40000 ALTER TABLE p RENAME TO q */", "shop"},
		{"/*M!100500 ALTER TABLE p RENAME TO q */", "shop"},
		{"SET STATEMENT max_statement_time=10 FOR ALTER TABLE p RENAME TO q", "shop"},
		{"CREATE OR REPLACE TABLE p (id INT)", "shop"},
		{"create or replace table `shop`.p like shop.other", "x"},
		{"CREATE OR REPLACE TEMPORARY TABLE p (id INT)", "shop"},
		{"CREATE OR REPLACE TABLE p SELECT 1 AS id", "shop"},
		{"CREATE OR REPLACE SEQUENCE p", "shop"},
		{"DROP DATABASE shop", "other"},
		{"drop schema if exists `shop`", ""},
		{"DROP DATABASE /* bye */ `shop`", "shop"},
		{"RENAME TABLE p TO q", "shop"},
		{"RENAME TABLE `shop`.`p` TO `shop`.`q`", "other"},
		{"RENAME TABLE a TO b, p TO c", "shop"},
		{"RENAME TABLE a WAIT 1 TO b, p TO c", "shop"},
		{"RENAME TABLE a NOWAIT TO b, p TO c", "shop"},
		{"RENAME TABLE IF EXISTS p TO q", "shop"},
		{"/* move */ RENAME /* it */ TABLES `p` TO `q`", "shop"},
		{"ALTER TABLE p TRUNCATE PARTITION p0", "shop"},
		{"ALTER TABLE p DROP PARTITION p0, p1", "shop"},
		{"ALTER TABLE p ALGORITHM=INPLACE, DROP PARTITION IF EXISTS p0", "shop"},
		{"ALTER TABLE p EXCHANGE PARTITION p0 WITH TABLE e", "shop"},
		{"ALTER TABLE e EXCHANGE PARTITION p0 WITH TABLE p WITHOUT VALIDATION", "shop"},
		{"ALTER TABLE `shop`.e EXCHANGE PARTITION p0 WITH TABLE `shop`.`p`", "other"},
		{"ALTER TABLE x CONVERT TABLE p TO PARTITION p9 VALUES LESS THAN (100)", "shop"},
		{"ALTER TABLE p CONVERT PARTITION p0 TO TABLE p_old", "shop"},
		{"ALTER TABLE p DISCARD TABLESPACE", "shop"},
		{"ALTER TABLE p IMPORT TABLESPACE", "shop"},
		{"ALTER TABLE p IMPORT PARTITION p0 TABLESPACE", "shop"},
		{"/* why */ DROP /* really */ TABLE /* yes */ `p`", "shop"},
		{"DROP TABLE\n-- a comment\n p", "shop"},
		{"DROP TABLE " + strings.Join(drop40, ", ") + ", `shop`.`p`", "other"},
		{`DROP TABLE "p"`, "shop"}, // sql_mode ANSI_QUOTES
		{"# why\nTRUNCATE p", "shop"},
		{"TRUNCATE TABLE `shop`.`p` WAIT 3", "other"},
	}
	for _, c := range stops {
		if err := ingest.StopsAt(c.q, c.schema, true); err == nil {
			t.Errorf("%q (current database %q) does not stop the ingester", c.q, c.schema)
		}
	}
	goesOn := []struct{ q, schema string }{
		{"ALTER TABLE p RENAME COLUMN a TO b", "shop"},
		{"ALTER TABLE p RENAME INDEX i TO j", "shop"},
		{"ALTER TABLE p RENAME KEY i TO j, ADD COLUMN z INT", "shop"},
		{"ALTER TABLE p ADD COLUMN `rename` INT, ADD COLUMN `partition` INT", "shop"},
		{"ALTER TABLE p COMMENT 'RENAME TO q, DROP PARTITION p0'", "shop"},
		{"ALTER TABLE p ADD PARTITION (PARTITION p2 VALUES LESS THAN (30))", "shop"},
		{"ALTER TABLE p REORGANIZE PARTITION p1 INTO (PARTITION p1 VALUES LESS THAN (20), PARTITION p3 VALUES LESS THAN MAXVALUE)", "shop"},
		{"ALTER TABLE p COALESCE PARTITION 2", "shop"},
		{"ALTER TABLE p REMOVE PARTITIONING", "shop"},
		{"ALTER TABLE p PARTITION BY KEY(id) PARTITIONS 4", "shop"},
		{"ALTER TABLE q RENAME TO r", "shop"},
		{"ALTER TABLE other.p RENAME TO other.q", "shop"},
		{"ALTER TABLE x EXCHANGE PARTITION p0 WITH TABLE y", "shop"},
		{"CREATE TABLE p2 LIKE p", "shop"},
		{"CREATE OR REPLACE TABLE q LIKE p", "shop"},
		{"CREATE OR REPLACE TABLE q AS SELECT * FROM p", "shop"},
		{"CREATE TABLE IF NOT EXISTS p (id INT)", "shop"},
		{"DROP DATABASE other", "shop"},
		{"DROP TABLE other.p", "shop"},
		{"RENAME TABLE q TO r", "shop"},
		{"RENAME USER a TO b", "shop"},
		{"INSERT INTO p VALUES ('ALTER TABLE p RENAME TO q')", "shop"},
		{"/* DROP TABLE p */ SELECT 1", "shop"},
		{"BEGIN", "shop"},
	}
	for _, c := range goesOn {
		if err := ingest.StopsAt(c.q, c.schema, true); err != nil {
			t.Errorf("%q (current database %q) stops the ingester: %v", c.q, c.schema, err)
		}
	}
}

// TestAudit10StatementsOnTheServer: the statements of
// TestAudit10StatementsThatChangeTheTable as MariaDB writes them to its
// binary log stop a running ingester (or, the last, do not).
func TestAudit10StatementsOnTheServer(t *testing.T) {
	const columns = "id VARCHAR(64) PRIMARY KEY, name VARCHAR(64) NOT NULL, brand VARCHAR(64) NOT NULL"
	for _, c := range []struct {
		name    string
		options string
		ddl     func(r *rig) // the statement, run once the snapshot is in
	}{
		{"ALTER TABLE RENAME TO", "", func(r *rig) {
			r.exec("ALTER TABLE `" + r.table + "` RENAME TO `" + r.table + "_old`")
			r.t.Cleanup(func() { r.db.Exec("DROP TABLE IF EXISTS `" + r.table + "_old`") })
		}},
		{"CREATE OR REPLACE TABLE", "", func(r *rig) {
			r.exec("CREATE OR REPLACE TABLE `" + r.table + "` (" + columns + ")")
		}},
		{"RENAME TABLE qualified, from another database", "", func(r *rig) {
			conn, err := r.db.Conn(r.t.Context())
			if err != nil {
				r.t.Fatal(err)
			}
			defer conn.Close()
			if _, err := conn.ExecContext(r.t.Context(), "USE mysql"); err != nil {
				r.t.Fatal(err)
			}
			if _, err := conn.ExecContext(r.t.Context(), "/* move */ RENAME TABLE `allot`.`"+r.table+"` TO `allot`.`"+r.table+"_moved`"); err != nil {
				r.t.Fatal(err)
			}
			r.t.Cleanup(func() { r.db.Exec("DROP TABLE IF EXISTS `allot`.`" + r.table + "_moved`") })
			// The connection goes back to the pool: in the rig's database.
			if _, err := conn.ExecContext(r.t.Context(), "USE allot"); err != nil {
				r.t.Fatal(err)
			}
		}},
		{"ALTER TABLE TRUNCATE PARTITION", "PARTITION BY KEY(id) PARTITIONS 2", func(r *rig) {
			r.exec("ALTER TABLE `" + r.table + "` TRUNCATE PARTITION p0, p1")
		}},
		{"EXCHANGE PARTITION WITH the table", "", func(r *rig) {
			other := r.table + "_parts"
			r.exec("CREATE TABLE `" + other + "` (" + columns + ") PARTITION BY KEY(id) PARTITIONS 1")
			r.t.Cleanup(func() { r.db.Exec("DROP TABLE IF EXISTS `" + other + "`") })
			r.exec("ALTER TABLE `" + other + "` EXCHANGE PARTITION p0 WITH TABLE `" + r.table + "`")
		}},
		{"executable comment", "", func(r *rig) {
			r.exec("/*!40000 ALTER TABLE `" + r.table + "` RENAME TO `" + r.table + "_x` */")
			r.t.Cleanup(func() { r.db.Exec("DROP TABLE IF EXISTS `" + r.table + "_x`") })
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, columns, c.options)
			r.exec("INSERT INTO `"+r.table+"` VALUES (?,?,?)", "A1", "Eins", "Acme")
			in := r.ingest("")
			r.waitRecord(in, "A1", "Eins|Acme|[]")
			c.ddl(r)
			waitStopped(t, in, c.name, "without row events")
		})
	}

	// A database dropped with the table in it.
	t.Run("DROP DATABASE", func(t *testing.T) {
		t.Parallel()
		r := newRig(t, columns, "")
		dbName := r.table + "_db"
		r.exec("CREATE DATABASE `" + dbName + "`")
		t.Cleanup(func() { r.db.Exec("DROP DATABASE IF EXISTS `" + dbName + "`") })
		r.exec("CREATE TABLE `" + dbName + "`.`" + r.table + "` (" + columns + ")")
		r.exec("INSERT INTO `"+dbName+"`.`"+r.table+"` VALUES (?,?,?)", "D1", "Eins", "Acme")
		in := r.ingestWith(strings.Replace(replDSN(), ")/allot", ")/"+dbName, 1), nil, "")
		r.waitRecord(in, "D1", "Eins|Acme|[]")
		r.exec("DROP DATABASE `" + dbName + "`")
		waitStopped(t, in, "DROP DATABASE", "without row events")
	})

	// Statements that leave the rows as they are: the ingester goes on.
	t.Run("benign ALTERs", func(t *testing.T) {
		t.Parallel()
		r := newRig(t, columns, "PARTITION BY KEY(id) PARTITIONS 2")
		r.exec("INSERT INTO `"+r.table+"` VALUES (?,?,?)", "A1", "Eins", "Acme")
		in := r.ingest("")
		r.waitRecord(in, "A1", "Eins|Acme|[]")
		r.exec("ALTER TABLE `" + r.table + "` COMMENT 'RENAME TO x, DROP PARTITION p0'")
		r.exec("ALTER TABLE `" + r.table + "` ADD COLUMN `rename` INT")
		r.exec("ALTER TABLE `" + r.table + "` RENAME COLUMN `rename` TO `renamed`")
		r.exec("ALTER TABLE `" + r.table + "` COALESCE PARTITION 1")
		r.exec("INSERT INTO `"+r.table+"` (id, name, brand) VALUES (?,?,?)", "A2", "Zwei", "Acme")
		r.waitRecord(in, "A2", "Zwei|Acme|[]")
		select {
		case <-in.done:
			t.Fatalf("the ingester stopped; its log:\n%s", in.logText())
		default:
		}
	})
}

// TestAudit10NumbersAndTimesAsTheServerPrintsThem: random DOUBLE, FLOAT
// (any bit pattern: subnormal, huge), DOUBLE(M,D), FLOAT(M,D), TIME(n) and
// BIT values from the binary log render as the server prints them (CAST
// AS CHAR; BIT as CAST AS UNSIGNED), value by value.
func TestAudit10NumbersAndTimesAsTheServerPrintsThem(t *testing.T) {
	_, ctx, db := mariaDBSource(t, time.Minute)
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	exec := func(q string) {
		t.Helper()
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatalf("%.200s: %v", q, err)
		}
	}
	exec("SET SESSION sql_mode = ''") // out-of-range values are clamped, as a lax writer's are
	table := fmt.Sprintf("ingest_a10_num_%d", time.Now().UnixNano())
	columns := []string{"d DOUBLE", "f FLOAT", "fd FLOAT(9,3)", "dd DOUBLE(20,4)", "big DOUBLE(30,3)", "r DOUBLE(10,0)", "dz DOUBLE(40,25)", "t0 TIME", "t2 TIME(2)", "t6 TIME(6)", "bt BIT(13)"}
	exec("CREATE TABLE `" + table + "` (id INT PRIMARY KEY, " + strings.Join(columns, ", ") + ")")
	defer db.Exec("DROP TABLE `" + table + "`")
	file, pos := binlogHead(ctx, t, db)

	rnd := rand.New(rand.NewSource(time.Now().UnixNano()))
	specials := []float64{0, math.Copysign(0, -1), 0.1, 1e21, 1e15, 1e16, 1e-15, 1e-16, 1234567, 16777217, 1234567890123456.7, 0.1 + 0.2, math.MaxFloat64, math.SmallestNonzeroFloat64, 123456.5, -2.5}
	const rows = 4000
	var vals []string
	for i := range rows {
		var d float64
		switch {
		case i < len(specials):
			d = specials[i]
		case i%3 == 0:
			d = math.Float64frombits(rnd.Uint64())
		case i%3 == 1:
			d = rnd.NormFloat64() * math.Pow(10, float64(rnd.Intn(40)-20))
		default:
			d = float64(rnd.Intn(100000000)) / math.Pow(10, float64(rnd.Intn(10)))
		}
		if math.IsNaN(d) || math.IsInf(d, 0) {
			d = 1
		}
		f := math.Float32frombits(rnd.Uint32())
		if i%2 == 0 {
			f = float32(d)
		}
		if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
			f = 1.5
		}
		sec, us := rnd.Intn(838*3600), rnd.Intn(1000000)
		if i%4 == 0 {
			us = 0
		}
		tm := fmt.Sprintf("%d:%02d:%02d.%06d", sec/3600, sec/60%60, sec%60, us)
		if i%2 == 1 {
			tm = "-" + tm
		}
		g := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
		vals = append(vals, fmt.Sprintf("(%d, %s, %s, %s, %s, %s, %s, %s, '%s', '%s', '%s', %d)", i, g(d), strconv.FormatFloat(float64(f), 'g', -1, 32),
			g(float64(rnd.Intn(2000000)-1000000)/1000), g(d/1e10), g(d), g(d), g(d/1e10), tm, tm, tm, rnd.Intn(8192)))
	}
	for i := 0; i < rows; i += 500 {
		exec("INSERT INTO `" + table + "` VALUES " + strings.Join(vals[i:i+500], ","))
	}

	// The server's text of every value.
	var selects []string
	for _, c := range columns {
		name, typ, _ := strings.Cut(c, " ")
		switch {
		case strings.HasPrefix(typ, "BIT"):
			selects = append(selects, "CAST("+name+" AS UNSIGNED)")
		default:
			selects = append(selects, "CAST("+name+" AS CHAR)")
		}
	}
	want := map[int32][]string{}
	res, err := db.QueryContext(ctx, "SELECT id, "+strings.Join(selects, ", ")+" FROM `"+table+"`")
	if err != nil {
		t.Fatal(err)
	}
	for res.Next() {
		var id int32
		texts := make([]sql.NullString, len(columns))
		ptrs := []any{&id}
		for i := range texts {
			ptrs = append(ptrs, &texts[i])
		}
		if err := res.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		for _, s := range texts {
			want[id] = append(want[id], s.String)
		}
	}
	res.Close()

	render, err := ingest.BinlogRenderer(ctx, db, "allot", table)
	if err != nil {
		t.Fatal(err)
	}
	syncer := replication.NewBinlogSyncer(replication.BinlogSyncerConfig{ServerID: uint32(600000 + time.Now().UnixNano()/1000%1000000), Flavor: mysql.MariaDBFlavor,
		Host: "127.0.0.1", Port: 13306, User: "allot_repl", Password: "allot_repl", Logger: log.NewDefault(&log.NullHandler{})})
	defer syncer.Close()
	stream, err := syncer.StartSync(mysql.Position{Name: file, Pos: pos})
	if err != nil {
		t.Fatal(err)
	}
	seen, failures := 0, 0
	for seen < rows {
		gctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		ev, err := stream.GetEvent(gctx)
		cancel()
		if err != nil {
			t.Fatalf("after %d rows: %v", seen, err)
		}
		e, ok := ev.Event.(*replication.RowsEvent)
		if !ok || string(e.Table.Table) != table {
			continue
		}
		for _, row := range e.Rows {
			seen++
			id := row[0].(int32)
			for c := range columns {
				got, err := render(e.Table, c+1, row[c+1])
				if err != nil || got != want[id][c] {
					if failures++; failures <= 20 {
						t.Errorf("row %d %s: the binary log's %v renders as %q (%v), the server prints %q", id, columns[c], row[c+1], got, err, want[id][c])
					}
				}
			}
		}
	}
	if failures > 0 {
		t.Errorf("%d of %d values render otherwise than the server prints them", failures, rows*len(columns))
	}
}
