package ingest_test

import (
	"strings"
	"testing"
)

// TestAudit12DSNCharsetDoesNotChangeWhatIsRead: a --dsn with charset=latin1
// (or another character set of the session's results) made the snapshot
// read every title in that character set; a non-ASCII one was then not
// UTF-8, allot refused it, and the record was deleted. The ingester reads
// in utf8mb4 whatever the DSN says.
func TestAudit12DSNCharsetDoesNotChangeWhatIsRead(t *testing.T) {
	r := newRig(t, columns12, "")
	r.exec("INSERT INTO `"+r.table+"` VALUES (?,?,?)", "C1", "Größe Jacke", "Über")
	in := r.ingest12(replDSN()+"?charset=latin1&character_set_results=latin1", "--server-id", r.serverID12())
	r.waitRecord(in, "C1", "Größe Jacke|Über|[]")
	r.exec("INSERT INTO `"+r.table+"` VALUES (?,?,?)", "C2", "Straße", "Öl")
	r.waitRecord(in, "C2", "Straße|Öl|[]")
}

// TestAudit12BinlogStreamHonoursTLS: with tls= in the --dsn the snapshot's
// connections used TLS, and the binary log's connection, which the DSN's
// driver does not make, went in plaintext. Through a proxy that offers
// TLS, every connection, the binary log's included, must use it; with
// tls=preferred against a source without TLS (the project's MariaDB)
// both go in plaintext, as the driver's preferred means.
func TestAudit12BinlogStreamHonoursTLS(t *testing.T) {
	r := newRig(t, columns12, "")
	r.exec("INSERT INTO `"+r.table+"` VALUES (?,?,?)", "T1", "Eins", "Acme")
	proxy := startMySQLProxy(t, nil, true)
	in := r.ingest12(proxy.dsn("tls=skip-verify"), "--server-id", r.serverID12())
	r.waitRecord(in, "T1", "Eins|Acme|[]")
	r.exec("INSERT INTO `"+r.table+"` VALUES (?,?,?)", "T2", "Zwei", "Acme")
	r.waitRecord(in, "T2", "Zwei|Acme|[]")
	binlogs := 0
	for i, c := range proxy.seen() {
		if c.binlog {
			binlogs++
		}
		if !c.tls {
			t.Errorf("connection %d (binary log: %v) went in plaintext", i+1, c.binlog)
		}
	}
	if binlogs == 0 {
		t.Errorf("no binary log connection went through the proxy: %+v", proxy.seen())
	}
	in.kill()

	in = r.ingest12(replDSN()+"?tls=preferred", "--server-id", r.serverID12())
	r.exec("INSERT INTO `"+r.table+"` VALUES (?,?,?)", "T3", "Drei", "Acme")
	r.waitRecord(in, "T3", "Drei|Acme|[]")
	if !strings.Contains(in.logText(), "plaintext") {
		t.Errorf("the ingester did not say it reads the binary log in plaintext:\n%s", in.logText())
	}
}
