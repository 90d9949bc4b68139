package ingest_test

import (
	"strings"
	"testing"
	"time"

	"allot/ingest"
)

// Every ingester registered with the source as server id 7379 unless told
// otherwise: a second ingester (of another table, the usual setup) made
// the source end the first one's binary log stream, and the first
// stopped with the source's bare error.

// TestAudit12IngestersOfTwoTablesKeepTheirStreams: two ingesters started
// without --server-id, each on its own table, both follow their tables.
func TestAudit12IngestersOfTwoTablesKeepTheirStreams(t *testing.T) {
	r1, r2 := newRig(t, columns12, ""), newRig(t, columns12, "")
	r1.exec("INSERT INTO `"+r1.table+"` VALUES (?,?,?)", "A1", "Eins", "Acme")
	r2.exec("INSERT INTO `"+r2.table+"` VALUES (?,?,?)", "B1", "Eins", "Acme")
	in1 := r1.ingest12(replDSN())
	r1.waitSnapshot(in1, 30*time.Second)
	in2 := r2.ingest12(replDSN())
	r2.waitSnapshot(in2, 30*time.Second)
	time.Sleep(time.Second) // both streams started
	r1.exec("UPDATE `"+r1.table+"` SET name = ? WHERE id = ?", "Eins neu", "A1")
	r2.exec("UPDATE `"+r2.table+"` SET name = ? WHERE id = ?", "Eins neu", "B1")
	r1.waitRecord(in1, "A1", "Eins neu|Acme|[]")
	r2.waitRecord(in2, "B1", "Eins neu|Acme|[]")
	for i, in := range []*ingester{in1, in2} {
		select {
		case <-in.done:
			t.Errorf("ingester %d stopped; its log:\n%s", i+1, in.logText())
		default:
		}
		if strings.Contains(in.logText(), "same server") {
			t.Errorf("ingester %d lost its stream to the other; its log:\n%s", i+1, in.logText())
		}
	}
}

// TestAudit12DuplicateServerIDIsNamed: two ingesters given the same
// --server-id: the one the source drops says that another replica took
// its server id and what to do.
func TestAudit12DuplicateServerIDIsNamed(t *testing.T) {
	r1, r2 := newRig(t, columns12, ""), newRig(t, columns12, "")
	in1 := r1.ingest12(replDSN(), "--server-id", r1.serverID12())
	r1.waitSnapshot(in1, 30*time.Second)
	in2 := r2.ingest12(replDSN(), "--server-id", r1.serverID12())
	r2.waitSnapshot(in2, 30*time.Second)
	waitStopped(t, in1, "an ingester whose server id another took", "--server-id")
}

// TestAudit12DefaultServerID: without a server id the configuration
// derives one from the source's address, database, table and state file,
// in the upper half of the ids (2^31 and up), where replicas numbered by
// hand do not go.
func TestAudit12DefaultServerID(t *testing.T) {
	id := func(dsn, table, state string) uint32 {
		t.Helper()
		c := ingest.Config{DSN: dsn, Table: table, SKUColumn: "sku", TitleColumn: "title", BrandColumn: "brand", Addr: "127.0.0.1:7379", StateFile: state}
		if err := c.Validate(); err != nil {
			t.Fatalf("%s %s %s: %v", dsn, table, state, err)
		}
		if c.ServerID < 1<<31 || c.ServerID == 1<<32-1 {
			t.Errorf("%s %s %s: server id %d, want 2^31 to 2^32-2", dsn, table, state, c.ServerID)
		}
		return c.ServerID
	}
	const dsn = "u:p@tcp(127.0.0.1:13306)/shop"
	base := id(dsn, "products", "/var/lib/a.json")
	if again := id(dsn+"?timeout=3s", "products", "/var/lib/a.json"); again != base {
		t.Errorf("the same source, table and state file: server ids %d and %d", base, again)
	}
	for _, other := range [][3]string{
		{dsn, "prices", "/var/lib/a.json"},
		{dsn, "products", "/var/lib/b.json"},
		{"u:p@tcp(127.0.0.1:13307)/shop", "products", "/var/lib/a.json"},
		{"u:p@tcp(127.0.0.1:13306)/shop2", "products", "/var/lib/a.json"},
	} {
		if got := id(other[0], other[1], other[2]); got == base {
			t.Errorf("%v: server id %d, the same as for %s products /var/lib/a.json", other, got, dsn)
		}
	}
}
