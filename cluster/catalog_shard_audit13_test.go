package cluster

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"allot/catalog"
	"allot/inventory"
)

// A node of a sharded cluster checked the groups of the ops sent to it,
// not the catalog: CATALOG.SET, CATALOG.DEL, CATALOG.GET and SEARCH were
// served by whichever node a client reached. Nothing places a record (the
// router does not route the catalog, and the map hashes groups, not
// SKUs), so two clients that reached two shards kept two records of one
// SKU, each search saw its own shard's part of the catalog, and a
// CATALOG.GET on another shard answered nil for a record that exists. The
// catalog now lives on one shard, the map's first (ShardMap.CatalogShard),
// where one ordered title index answers every search; a node of another
// shard refuses the four as invalid, as it refuses another shard's groups.

// TestOpCheckCatalogOnItsShard: the check refuses the catalog's ops on
// every shard but the catalog's, names it, and lets them through there
// without allocating.
func TestOpCheckCatalogOnItsShard(t *testing.T) {
	m, _ := NewShardMap(3)
	if m.CatalogShard() != "s0" {
		t.Fatalf("catalog shard %q, want s0 (the map's first)", m.CatalogShard())
	}
	ops := []inventory.Op{
		inventory.CatalogSet(catalog.Record{SKU: "x", Title: "Lamp", Brand: "b"}),
		inventory.CatalogDel("x"),
		inventory.CatalogGet("x"),
		inventory.Search(catalog.Query{Prefix: "la"}),
	}
	for _, shard := range []string{"s1", "s2"} {
		check := m.opCheck(shard)
		want := fmt.Sprintf("the catalog belongs to shard s0, not %s", shard)
		for _, op := range ops {
			if got := check(&op); got != want {
				t.Errorf("%s on shard %s: %q; want %q", op.Kind, shard, got, want)
			}
		}
	}
	home := m.opCheck("s0")
	for _, op := range ops {
		if got := home(&op); got != "" {
			t.Errorf("%s on the catalog's shard: %q; want it let through", op.Kind, got)
		}
		if n := testing.AllocsPerRun(100, func() { home(&op) }); n != 0 {
			t.Errorf("%s on the catalog's shard: %v allocations per check; want none", op.Kind, n)
		}
	}
	if (ShardMap{}).opCheck("main") != nil {
		t.Fatal("a cluster of one shard: no check wanted, the catalog is its")
	}
}

// TestNodeRefusesCatalogOfAnotherShard: over RESP and HTTP, a node of a
// shard that is not the catalog's refuses a catalog write (nothing
// applied, its idempotency key bound to nothing) and the catalog's reads;
// the catalog's shard serves them.
func TestNodeRefusesCatalogOfAnotherShard(t *testing.T) {
	sc, r, groups, _, _ := crossShards(t, "cs", 10, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	home := r.m.CatalogShard()
	var away string
	for _, s := range r.m.Shards {
		if s != home {
			away = s
		}
	}
	homeNode, awayNode := sc.shards[home].nodes["n1"], sc.shards[away].nodes["n1"]
	want := fmt.Sprintf("the catalog belongs to shard %s, not %s", home, away)
	rec := catalog.Record{SKU: "lamp-1", Title: "Desk lamp", Brand: "Acme"}

	if err := awayNode.cli.CatalogSet(ctx, rec, "k-cs"); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("CATALOG.SET on shard %s's node: %v; want -ERR %s", away, err, want)
	}
	if _, err := awayNode.cli.CatalogDel(ctx, rec.SKU, ""); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("CATALOG.DEL on shard %s's node: %v; want -ERR %s", away, err, want)
	}
	if _, _, err := awayNode.cli.CatalogGet(ctx, rec.SKU); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("CATALOG.GET on shard %s's node: %v; want -ERR %s", away, err, want)
	}
	if _, err := awayNode.cli.Search(ctx, catalog.Query{Prefix: "desk"}, nil); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("SEARCH on shard %s's node: %v; want -ERR %s", away, err, want)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPut, "http://"+awayNode.http+"/v1/catalog/"+rec.SKU,
		strings.NewReader(`{"title":"Desk lamp","brand":"Acme","attributes":{}}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), want) {
		t.Fatalf("PUT /v1/catalog on shard %s's node: %s %s; want 400 invalid naming shard %s", away, resp.Status, body, home)
	}
	// The refused write bound no key: the same key on one of that shard's
	// groups is applied there.
	var g inventory.GroupKey
	for _, x := range groups {
		if r.m.Of(x) == away {
			g = x
			break
		}
	}
	keyed := inventory.Capture(g, 1)
	keyed.IdempotencyKey = "k-cs"
	if res, err := awayNode.cli.Do(ctx, keyed, nil); err != nil || res.Code != inventory.CodeOK {
		t.Fatalf("the refused CATALOG.SET's key on a capture of shard %s: %+v %v; want OK (a refused request binds no key)", away, res, err)
	}
	// The catalog's shard serves the catalog.
	if err := homeNode.cli.CatalogSet(ctx, rec, "k-cs-home"); err != nil {
		t.Fatalf("CATALOG.SET on the catalog's shard %s: %v", home, err)
	}
	if got, found, err := homeNode.cli.CatalogGet(ctx, rec.SKU); err != nil || !found || got.Title != rec.Title {
		t.Fatalf("CATALOG.GET on the catalog's shard: %+v %v %v", got, found, err)
	}
	if hits, err := homeNode.cli.Search(ctx, catalog.Query{Prefix: "desk"}, nil); err != nil || len(hits) != 1 || hits[0].SKU != rec.SKU {
		t.Fatalf("SEARCH on the catalog's shard: %+v %v", hits, err)
	}
}
