package cluster

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"allot/catalog"
	"allot/inventory"
)

// The catalog of a sharded cluster moved to the map's first shard, and the
// nodes of the other shards refuse its ops. A cluster that ran an earlier
// release keeps the records set on those shards: replayed from their
// journals and logs, refused to every client, and nothing said so. A node
// of such a shard now warns when it opens its engine and when it takes
// over, naming the shard, the count and what to do, and serves its stock
// (catalog_stranded.go says why it does not refuse to start).

// TestStrandedCatalogRecordsWarned: a node of shard s1 takes catalog
// records while the cluster has no map (as every shard's nodes did before
// the catalog moved); the map of s0 and s1 is made, and the node, started
// again, logs the warning once, naming s1, the count, s0 and the remedy,
// and serves s1's stock.
func TestStrandedCatalogRecordsWarned(t *testing.T) {
	_, urls := privateNATS(t)
	c := newNamedShard(t, "s1")
	p := c.start("n1")
	c.waitPrimary("", 30*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, found, err := ReadShardMap(ctx, urls); err != nil || found {
		t.Fatalf("the private cluster has a shard map already (found %v, %v); this test makes its own", found, err)
	}
	const records = 3
	for i := range records {
		rec := catalog.Record{SKU: fmt.Sprintf("old-%d", i), Title: fmt.Sprintf("Lamp %d", i), Brand: "Acme"}
		if err := p.cli.CatalogSet(ctx, rec, ""); err != nil {
			t.Fatalf("CATALOG.SET on shard s1 with no map: %v", err)
		}
	}
	p.kill(syscall.SIGTERM)
	<-p.exited

	if _, err := CreateShardMap(ctx, urls, 2); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		nc, js, err := connect(urls, "test cleanup")
		if err == nil {
			js.DeleteKeyValue(ctx, shardMapBucket)
			nc.Close()
		}
	})
	p = c.start("n1")
	// waitPrimary stocks a row of s1's: the node serves its stock.
	c.waitPrimary("", 30*time.Second)
	row := c.probeRow()
	if res, err := p.cli.Get(ctx, row); err != nil || res.Code != inventory.CodeOK {
		t.Fatalf("GET of shard s1's row %v: %+v %v; want it served", row, res, err)
	}
	if _, _, err := p.cli.CatalogGet(ctx, "old-0"); err == nil || !strings.Contains(err.Error(), "the catalog belongs to shard s0, not s1") {
		t.Fatalf("CATALOG.GET of a stranded record: %v; want it refused", err)
	}

	b, err := os.ReadFile(p.log)
	if err != nil {
		t.Fatal(err)
	}
	log := string(b)
	want := strconv.Quote(strandedCatalogMessage("s1", "s0", records))
	if n := strings.Count(log, want); n != 1 {
		t.Fatalf("the node's log holds the warning %d times; want once:\n%s\nlog:\n%s", n, want, log)
	}
	for _, fact := range []string{"level=WARN", "shard s1 holds 3 catalog records", "catalog lives on shard s0",
		"Set them again on shard s0", "catalog_records=3", "catalog_shard=s0", "skus=old-0,old-1,old-2"} {
		if !strings.Contains(log, fact) {
			t.Errorf("the warning does not say %q:\n%s", fact, log)
		}
	}
}
