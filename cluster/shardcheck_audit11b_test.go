package cluster

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"allot/inventory"
)

// TestNodeRefusesAnotherShardsGroup: a node of a sharded cluster took any
// op sent to it directly (redis-cli, an HTTP client, a Go client given
// its address), whatever shard the op's group hashes to: a STOCK.SET of
// another shard's group made the group exist on two shards, each with
// part of its units, and the router, which reads and captures on one,
// never saw the other's. A node now refuses, as invalid, every op naming
// a group of another shard (a HOLD or ORDER with any such line), before
// it is submitted: nothing applied, no key bound. The router, which
// sends each op to its group's shard, is unaffected.
func TestNodeRefusesAnotherShardsGroup(t *testing.T) {
	sc, r, _, a, b := crossShards(t, "sc", 10, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	home, away := r.m.Of(a), r.m.Of(b) // b is another shard's group on a's node
	node := sc.shards[home].nodes["n1"]
	want := fmt.Sprintf("group %s/%s/%s belongs to shard %s, not %s", b.SKU, b.Condition, b.Source, away, home)
	rowB := inventory.RowKey{SKU: b.SKU, Warehouse: "w9", Condition: b.Condition, Source: b.Source}
	for _, op := range []inventory.Op{
		inventory.Stock(rowB, 99, 1),
		inventory.Capture(b, 1),
		inventory.Release(rowB, 1),
		inventory.Hold("h-sc", 60000, []inventory.Demand{{Group: a, N: 1}, {Group: b, N: 1}}),
		{Kind: inventory.KindOrder, Lines: []inventory.Demand{{Group: a, N: 1}, {Group: b, N: 1}}, IdempotencyKey: "k-sc"},
		inventory.Get(rowB),
		inventory.Available(b),
	} {
		res, err := node.cli.Do(ctx, op, nil)
		if err != nil || res.Code != inventory.CodeInvalid || res.Detail != want {
			t.Fatalf("%s of shard %s's group sent to shard %s's node: %+v %v; want -ERR %s", op.Kind, away, home, res, err, want)
		}
	}
	// HTTP: 400 invalid, with the same detail.
	body := fmt.Sprintf(`{"sku":%q,"warehouse":"w9","condition":%q,"source":%q,"count":99,"price":1}`, b.SKU, b.Condition, b.Source)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPut, "http://"+node.http+"/v1/stock", strings.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(got), "belongs to shard "+away) {
		t.Fatalf("PUT /v1/stock of shard %s's group on shard %s's node: %s %s; want 400 invalid naming the shard", away, home, resp.Status, got)
	}
	// Nothing changed: the group is whole on its shard, the hold was not
	// taken, the key binds nothing (the same key with this shard's lines
	// is applied).
	if n := available(t, ctx, r, b); n != 20 {
		t.Fatalf("group b at %d on its shard, want 20", n)
	}
	if n := available(t, ctx, r, a); n != 20 {
		t.Fatalf("group a at %d, want 20 (the refused HOLD and ORDER took none)", n)
	}
	if res, err := node.cli.Do(ctx, inventory.HoldGet("h-sc"), nil); err != nil || res.Code != inventory.CodeNotFound {
		t.Fatalf("HOLD.GET of the refused hold: %+v %v; want NOTFOUND", res, err)
	}
	own := inventory.Op{Kind: inventory.KindOrder, Lines: []inventory.Demand{{Group: a, N: 1}}, IdempotencyKey: "k-sc"}
	if res, err := node.cli.Do(ctx, own, nil); err != nil || res.Code != inventory.CodeOK {
		t.Fatalf("the refused ORDER's key with this shard's lines: %+v %v; want OK (a refused request binds no key)", res, err)
	}
	// The router sends each group's ops to its shard, and a cross-shard
	// order still runs.
	if res, err := r.Do(ctx, inventory.Capture(b, 2), nil); err != nil || res.Code != inventory.CodeOK {
		t.Fatalf("a capture through the router: %+v %v", res, err)
	}
	if res, err := r.Order(ctx, "k-sc2", []inventory.Demand{{Group: a, N: 1}, {Group: b, N: 1}}); err != nil || res.Code != inventory.CodeOK {
		t.Fatalf("a cross-shard order through the router: %+v %v", res, err)
	}
	if n := available(t, ctx, r, b); n != 17 {
		t.Fatalf("group b at %d after the router's capture and order, want 17", n)
	}
}
