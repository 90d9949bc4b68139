package cluster

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"allot/catalog"
	"allot/client"
	"allot/inventory"
)

// The Router had no catalog API: a Go program on a sharded cluster had to
// find the catalog shard's primary itself (read the map, then the lease)
// and follow its failovers by hand. The Router now sends CatalogSet,
// CatalogGet, CatalogDel and Search to the catalog shard's primary by the
// call path of its stock ops.

// routerPoolAddr returns the address of the pool r keeps to shard's
// primary ("" when none): the node its last call reached.
func routerPoolAddr(r *Router, shard string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p := r.pools[shard]; p != nil {
		return p.Addr()
	}
	return ""
}

// splitSKU returns a SKU with one group on shard home and one on shard
// away: its rows, stocked on both, make a search's available count one
// shard's units.
func splitSKU(t *testing.T, m ShardMap, home, away string) (sku string, atHome, atAway inventory.GroupKey) {
	t.Helper()
	conditions := []string{"new", "used", "refurbished", "open-box"}
	for i := range 1000 {
		sku = fmt.Sprintf("lamp-%d", i)
		var h, a *inventory.GroupKey
		for _, c := range conditions {
			g := inventory.GroupKey{SKU: sku, Condition: c, Source: "s1"}
			switch s := m.Of(g); {
			case s == home && h == nil:
				h = &g
			case s == away && a == nil:
				a = &g
			}
		}
		if h != nil && a != nil {
			return sku, *h, *a
		}
	}
	t.Fatalf("no SKU with groups on both %s and %s", home, away)
	return
}

// TestRouterCatalogOnCatalogShard: on a map of two shards, a record set,
// read, searched and deleted through a Router lands on the catalog's
// shard, where a client of that shard's node reads it; results and errors
// are client.Client's; a search's available counts the units on the
// catalog's shard only.
func TestRouterCatalogOnCatalogShard(t *testing.T) {
	sc := newSharded(t, 2)
	r := sc.router("catalog", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m := r.Map()
	home, away := m.CatalogShard(), m.Shards[1]
	if home != "s0" || away == home {
		t.Fatalf("catalog shard %q of %v", home, m.Shards)
	}
	homeNode := sc.shards[home].nodes["n1"]

	sku, atHome, atAway := splitSKU(t, m, home, away)
	for _, s := range []struct {
		g inventory.GroupKey
		n int64
	}{{atHome, 5}, {atAway, 7}} {
		k := inventory.RowKey{SKU: s.g.SKU, Warehouse: "w1", Condition: s.g.Condition, Source: s.g.Source}
		if res, err := r.Do(ctx, inventory.Stock(k, s.n, 100), nil); err != nil || res.Code != inventory.CodeOK {
			t.Fatalf("stock %v: %+v %v", k, res, err)
		}
	}

	rec := catalog.Record{SKU: sku, Title: "Desk lamp", Brand: "Acme",
		Attributes: []catalog.Attribute{{Name: "colour", Value: "red"}, {Name: "bulb", Value: "E27"}}}
	if err := r.CatalogSet(ctx, rec, ""); err != nil {
		t.Fatalf("Router.CatalogSet: %v", err)
	}
	if got := routerPoolAddr(r, home); got != homeNode.resp {
		t.Fatalf("the router's catalog set went to %q; want shard %s's primary %s", got, home, homeNode.resp)
	}
	want := rec.Clone()
	want.Normalize()
	got, found, err := homeNode.cli.CatalogGet(ctx, sku)
	if err != nil || !found || !reflect.DeepEqual(got, want) {
		t.Fatalf("CATALOG.GET on shard %s's node after Router.CatalogSet: %+v found=%v %v; want %+v", home, got, found, err, want)
	}
	got, found, err = r.CatalogGet(ctx, sku)
	if err != nil || !found || !reflect.DeepEqual(got, want) {
		t.Fatalf("Router.CatalogGet: %+v found=%v %v; want %+v", got, found, err, want)
	}
	if got, found, err := r.CatalogGet(ctx, "no-such-sku"); err != nil || found || !reflect.DeepEqual(got, catalog.Record{}) {
		t.Fatalf("Router.CatalogGet of an unknown SKU: %+v found=%v %v; want not found, no error", got, found, err)
	}

	// A record set on the node directly is the router's to read too: one
	// catalog, on one shard.
	direct := catalog.Record{SKU: "desk-2", Title: "Desk organiser", Brand: "Bureau"}
	if err := homeNode.cli.CatalogSet(ctx, direct, ""); err != nil {
		t.Fatal(err)
	}

	q := catalog.Query{Prefix: "DESK"}
	sentinel := catalog.Result{SKU: "kept"}
	hits, err := r.Search(ctx, q, []catalog.Result{sentinel})
	if err != nil {
		t.Fatalf("Router.Search: %v", err)
	}
	wantHits := []catalog.Result{sentinel,
		{SKU: sku, Title: "Desk lamp", Brand: "Acme", Available: 5},
		{SKU: "desk-2", Title: "Desk organiser", Brand: "Bureau", Available: 0}}
	if !reflect.DeepEqual(hits, wantHits) {
		t.Fatalf("Router.Search %q: %+v; want %+v (out kept, available of shard %s's rows only: 5 of 12)", q.Prefix, hits, wantHits, home)
	}
	nodeHits, err := homeNode.cli.Search(ctx, q, nil)
	if err != nil || !reflect.DeepEqual(nodeHits, wantHits[1:]) {
		t.Fatalf("SEARCH on shard %s's node: %+v %v; want the router's %+v", home, nodeHits, err, wantHits[1:])
	}
	res, err := r.Do(ctx, inventory.Search(catalog.Query{Prefix: "desk", Brand: "acm"}), nil)
	if err != nil || res.Code != inventory.CodeOK || !reflect.DeepEqual(res.Hits, wantHits[1:2]) {
		t.Fatalf("Router.Do search: %+v %v; want %+v", res, err, wantHits[1:2])
	}

	// Errors keep client.Client's: an invalid record or query is a
	// *ServerError of no class (nothing applied, not retried), the same
	// reply the node gives.
	bad := catalog.Record{SKU: "bad", Title: "", Brand: "Acme"}
	routerErr := r.CatalogSet(ctx, bad, "")
	nodeErr := homeNode.cli.CatalogSet(ctx, bad, "")
	checkNoClass(t, "Router.CatalogSet of a record without a title", routerErr, nodeErr)
	_, routerErr = r.Search(ctx, catalog.Query{Prefix: ""}, nil)
	_, nodeErr = homeNode.cli.Search(ctx, catalog.Query{Prefix: ""}, nil)
	checkNoClass(t, "Router.Search of an empty prefix", routerErr, nodeErr)
	if err := r.CatalogSet(ctx, catalog.Record{SKU: "keyed", Title: "Keyed lamp", Brand: "Acme"}, "k-set"); err != nil {
		t.Fatalf("keyed Router.CatalogSet: %v", err)
	}
	if err := r.CatalogSet(ctx, catalog.Record{SKU: "keyed", Title: "Keyed lamp", Brand: "Acme"}, "k-set"); err != nil {
		t.Fatalf("keyed Router.CatalogSet repeated: %v", err)
	}
	routerErr = r.CatalogSet(ctx, catalog.Record{SKU: "keyed", Title: "Other lamp", Brand: "Acme"}, "k-set")
	nodeErr = homeNode.cli.CatalogSet(ctx, catalog.Record{SKU: "keyed", Title: "Other lamp", Brand: "Acme"}, "k-set")
	checkNoClass(t, "Router.CatalogSet of another record under a used key", routerErr, nodeErr)
	if got, _, _ := homeNode.cli.CatalogGet(ctx, "keyed"); got.Title != "Keyed lamp" {
		t.Fatalf("the record under a key used with another: %+v; want the first", got)
	}
	if _, err := r.Do(ctx, inventory.CatalogGet(sku), nil); err == nil || !strings.Contains(err.Error(), "CatalogGet") {
		t.Fatalf("Router.Do catalog.get: %v; want it refused, naming CatalogGet", err)
	}

	deleted, err := r.CatalogDel(ctx, sku, "k-del")
	if err != nil || !deleted {
		t.Fatalf("Router.CatalogDel: deleted=%v %v; want true", deleted, err)
	}
	if got, found, err := homeNode.cli.CatalogGet(ctx, sku); err != nil || found {
		t.Fatalf("CATALOG.GET on shard %s's node after Router.CatalogDel: %+v found=%v %v; want none", home, got, found, err)
	}
	if deleted, err := r.CatalogDel(ctx, sku, "k-del"); err != nil || !deleted {
		t.Fatalf("Router.CatalogDel repeated under its key: deleted=%v %v; want the first outcome, true", deleted, err)
	}
	if deleted, err := r.CatalogDel(ctx, sku, ""); err != nil || deleted {
		t.Fatalf("Router.CatalogDel of a deleted record: deleted=%v %v; want false", deleted, err)
	}
	if hits, err := r.Search(ctx, q, nil); err != nil || len(hits) != 1 || hits[0].SKU != "desk-2" {
		t.Fatalf("Router.Search after the delete: %+v %v; want desk-2 only", hits, err)
	}
}

// checkNoClass fails unless routerErr is a *client.ServerError of no
// outcome class whose reply is nodeErr's.
func checkNoClass(t *testing.T, what string, routerErr, nodeErr error) {
	t.Helper()
	var se *client.ServerError
	if !errors.As(routerErr, &se) || errors.Is(routerErr, client.ErrUnavailable) || errors.Is(routerErr, client.ErrOutcomeUnknown) {
		t.Fatalf("%s: %v; want a *client.ServerError of no class", what, routerErr)
	}
	var nse *client.ServerError
	if !errors.As(nodeErr, &nse) || nse.Msg != se.Msg {
		t.Fatalf("%s: the router's reply %q, the node's %v; want the same", what, se.Msg, nodeErr)
	}
}

// TestRouterCatalogFollowsCatalogPrimary: the catalog shard's primary is
// killed; the router's next catalog ops reach the standby that took over,
// which has the record set before the kill, and what they set is there.
func TestRouterCatalogFollowsCatalogPrimary(t *testing.T) {
	sc := newSharded(t, 2)
	r := sc.router("catalog-failover", func(c *RouterConfig) { c.RetryFor = 45 * time.Second })
	home := sc.shards[r.Map().CatalogShard()]
	home.start("n2")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	before := catalog.Record{SKU: "lamp-before", Title: "Lamp set before", Brand: "Acme"}
	if err := r.CatalogSet(ctx, before, "k-before"); err != nil {
		t.Fatalf("Router.CatalogSet: %v", err)
	}
	id := home.primary()
	killed := home.nodes[id]
	if killed == nil || routerPoolAddr(r, home.shard) != killed.resp {
		t.Fatalf("the lease names %q; the router's catalog pool is at %q", id, routerPoolAddr(r, home.shard))
	}
	killed.kill(syscall.SIGKILL)

	got, found, err := r.CatalogGet(ctx, before.SKU)
	if err != nil || !found || got.Title != before.Title {
		t.Fatalf("Router.CatalogGet after the kill of %s: %+v found=%v %v; want the record set before", id, got, found, err)
	}
	after := home.waitPrimary(id, 30*time.Second)
	if at := routerPoolAddr(r, home.shard); at != after.resp {
		t.Fatalf("the router's catalog get went to %q; want the new primary %s (%s)", at, after.id, after.resp)
	}
	later := catalog.Record{SKU: "lamp-after", Title: "Lamp set after", Brand: "Acme"}
	if err := r.CatalogSet(ctx, later, ""); err != nil {
		t.Fatalf("Router.CatalogSet after the failover: %v", err)
	}
	if got, found, err := after.cli.CatalogGet(ctx, later.SKU); err != nil || !found || got.Title != later.Title {
		t.Fatalf("CATALOG.GET on the new primary %s: %+v found=%v %v", after.id, got, found, err)
	}
	if hits, err := r.Search(ctx, catalog.Query{Prefix: "lamp set"}, nil); err != nil || len(hits) != 2 {
		t.Fatalf("Router.Search after the failover: %+v %v; want both records", hits, err)
	}
	if deleted, err := r.CatalogDel(ctx, before.SKU, ""); err != nil || !deleted {
		t.Fatalf("Router.CatalogDel after the failover: %v %v", deleted, err)
	}
	t.Logf("killed %s of shard %s; the router's catalog ops reached %s", id, home.shard, after.id)
}
