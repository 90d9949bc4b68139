package ingest_test

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// TestAudit15InetAttributesFromTheBinlog: MariaDB's INET6 and INET4 types,
// like UUID, are printed by the server as text, which the snapshot reads,
// and written to the binary log as their bytes (trailing zero bytes left
// out). Mapped as attributes, they were sent as those bytes: every insert
// or update of a row after the snapshot was a row the catalog cannot hold
// ("attribute ip value contains a control character"), and its record was
// deleted. The rows here (every zero-run shape of an IPv6 address,
// IPv4-mapped and -compatible ones, random ones) must read from the binary
// log as the server prints them.
func TestAudit15InetAttributesFromTheBinlog(t *testing.T) {
	r, dsn := newRig15(t, "id VARCHAR(64) PRIMARY KEY, name VARCHAR(256), brand VARCHAR(256), ip INET6, v4 INET4")
	tbl := "`" + r.table + "`"
	addrs := []string{"::", "::1", "1::", "2001:db8::1", "2001:db8:0:1:1:1:1:1", "2001:0:0:1:0:0:0:1", "1:0:0:2:0:0:3:4",
		"::ffff:10.0.0.1", "::10.0.0.1", "::ffff:0:1", "0:0:0:0:0:ffff:0:0", "::1:0:0:0:0", "fe80::1:2", "1:2:3:4:5:6:7:8"}
	rng := rand.New(rand.NewPCG(15, uint64(r.stamp)))
	for range 40 {
		var b [16]byte
		for i := range b {
			if rng.IntN(3) > 0 {
				b[i] = byte(rng.IntN(256))
			}
		}
		addrs = append(addrs, netip.AddrFrom16(b).String())
	}
	insert := func(prefix string) {
		var rows []string
		for i, a := range addrs {
			v4 := fmt.Sprintf("%d.%d.%d.%d", rng.IntN(256), rng.IntN(3)/2*rng.IntN(256), 0, i%2*rng.IntN(256))
			rows = append(rows, fmt.Sprintf("('%s%d', 'Titel', 'Acme', '%s', '%s')", prefix, i, a, v4))
		}
		r.exec("INSERT INTO " + tbl + " VALUES " + strings.Join(rows, ", "))
	}
	insert("S")
	in := r.ingest12(dsn, "--server-id", fmt.Sprint(1_930_000+r.stamp/1000%20_000), "--attributes", "ip,v4")
	r.waitSnapshot(in, 30*time.Second)
	insert("B")
	r.exec("UPDATE " + tbl + " SET name = 'Titel neu' WHERE id LIKE 'S%'")
	r.exec("INSERT INTO " + tbl + " VALUES ('end', 'Ende', 'Acme', NULL, NULL)")
	r.waitRecord(in, "end", "Ende|Acme|[{ip } {v4 }]")
	want := r.tableRecords("ip", "v4")
	if len(want) != 2*len(addrs)+1 {
		t.Fatalf("the table has %d rows the catalog can hold, want %d", len(want), 2*len(addrs)+1)
	}
	for sku, w := range want {
		if got := r.record(sku); got != w {
			t.Errorf("%s is %q in the catalog, want %q as the table has it", sku, got, w)
		}
	}
	if t.Failed() {
		t.Logf("ingester log:\n%s", in.logText())
	}
}
