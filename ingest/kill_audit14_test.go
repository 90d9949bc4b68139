package ingest_test

import (
	"testing"

	"github.com/go-sql-driver/mysql"
)

// comKill reads the source's count of KILL statements run.
func (r *rig) comKill() int64 {
	r.t.Helper()
	var name string
	var n int64
	if err := r.db.QueryRowContext(r.t.Context(), "SHOW GLOBAL STATUS LIKE 'Com_kill'").Scan(&name, &n); err != nil {
		r.t.Fatal(err)
	}
	return n
}

// After a lost connection the binlog library's Close dialled the DSN anew
// and sent KILL <the old stream's connection id> there: on a restarted
// source, or another server behind the address, that id may be another
// client's thread. The ingester closes a stream without it: across a lost
// connection and the resumed stream, the source runs no KILL.
func TestAudit14ReconnectSendsNoKill(t *testing.T) {
	r := newRig(t, "id VARCHAR(64) PRIMARY KEY, name VARCHAR(256) NOT NULL, brand VARCHAR(256) NOT NULL", "")
	r.exec("INSERT INTO `" + r.table + "` VALUES ('S1','Snap one','Acme')")
	m, err := mysql.ParseDSN(replDSN())
	if err != nil {
		t.Fatal(err)
	}
	p := startBinlogProxy(t, m.Addr, r.table)
	ip := r.ingestThrough(p.dsn(t))
	r.waitCatalog(ip, map[string]string{"S1": "Snap one|Acme|[]"})
	before := r.comKill()
	p.cutAll()
	r.exec("INSERT INTO `" + r.table + "` VALUES ('A1','After','Acme')")
	r.waitCatalog(ip, map[string]string{"A1": "After|Acme|[]"})
	if n := ip.metric("allot_ingest_reconnects_total"); n < 1 {
		t.Fatalf("allot_ingest_reconnects_total is %d: the stream was not cut", n)
	}
	if after := r.comKill(); after != before {
		t.Fatalf("the source ran %d KILL statements across the ingester's reconnect, want none", after-before)
	}
}
