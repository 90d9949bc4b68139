package ingest_test

import "fmt"

// The twelfth audit's tests start `allot ingest mysql` with flags the rig's
// ingest and ingestWith do not give.

// columns12 are the columns of most of the twelfth audit's tables.
const columns12 = "id VARCHAR(64) PRIMARY KEY, name VARCHAR(256) NOT NULL, brand VARCHAR(256) NOT NULL"

// ingest12 starts `allot ingest mysql` on r's table (columns id, name and
// brand) reading the source at dsn, with the flags extra; without a
// --server-id among them the ingester derives its own.
func (r *rig) ingest12(dsn string, extra ...string) *ingester {
	r.t.Helper()
	args := append([]string{"--dsn", dsn, "--table", r.table, "--sku", "id", "--title", "name", "--brand", "brand",
		"--addr", r.allot.Addr(), "--state", r.state, "--metrics", "", "--checkpoint-every", "100ms"}, extra...)
	in := binaryIngester(r.bin)(r.t, args...)
	r.t.Cleanup(in.kill)
	return in
}

// serverID12 is a server id of the run's own, outside the ranges of the
// other tests (two runs at once must not displace each other's streams).
func (r *rig) serverID12() string {
	return fmt.Sprint(1_700_000 + r.stamp/1000%1_000_000)
}
