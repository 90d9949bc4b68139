package cluster

import (
	"context"
	"fmt"
	"hash/fnv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"allot/inventory"
)

// TestRouterCommitMarginCoversAFailover: the commit margin defaults to
// what a failover and the clocks' skew take (2 × the lease TTL + the
// skew), and a margin below the lease TTL is refused with what to give.
// It defaulted to 2 s, less than the default TTL (3 s) alone.
func TestRouterCommitMarginCoversAFailover(t *testing.T) {
	c := RouterConfig{URLs: "nats://127.0.0.1:4222"}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.LeaseTTL != 3*time.Second || c.CommitMargin != 2*3*time.Second+clockSkewMax {
		t.Fatalf("defaults: lease TTL %v, commit margin %v; want 3s and 2 × 3s + %v", c.LeaseTTL, c.CommitMargin, clockSkewMax)
	}
	c = RouterConfig{URLs: "nats://127.0.0.1:4222", LeaseTTL: 5 * time.Second, HoldTTL: time.Minute}
	if err := c.Validate(); err != nil || c.CommitMargin != 10*time.Second+clockSkewMax {
		t.Fatalf("lease TTL 5s: commit margin %v %v; want 2 × 5s + %v", c.CommitMargin, err, clockSkewMax)
	}
	c = RouterConfig{URLs: "nats://127.0.0.1:4222", CommitMargin: 2 * time.Second}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "below the shards' lease TTL 3s") {
		t.Fatalf("a 2s margin with a 3s lease TTL: %v; want it refused", err)
	}
	c = RouterConfig{URLs: "nats://127.0.0.1:4222", HoldTTL: 5 * time.Second}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "must exceed the commit margin") {
		t.Fatalf("a 5s hold TTL under the default margin: %v; want it refused", err)
	}
}

// TestRouterReadsTheShardsLeaseTTL: a router given no lease TTL takes the
// longest its shards' lease buckets record, and the margin with it; one
// given a shorter TTL than a shard's is refused.
func TestRouterReadsTheShardsLeaseTTL(t *testing.T) {
	_, urls := privateNATS(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m, err := CreateShardMap(ctx, urls, 2)
	if err != nil {
		t.Fatal(err)
	}
	nc, js, err := connect(urls, "test lease ttl")
	if err != nil {
		t.Fatal(err)
	}
	n, _ := namesOf(m.Shards[1])
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		js.DeleteKeyValue(ctx, n.lease)
		js.DeleteKeyValue(ctx, shardMapBucket)
		js.DeleteKeyValue(ctx, ordersBucket)
		nc.Close()
	})
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		_, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: n.lease, TTL: 5 * time.Second,
			Storage: jetstream.FileStorage, Replicas: 3})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
	}
	r, err := NewRouter(ctx, RouterConfig{URLs: urls, Coordinator: "ttl"})
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	if r.cfg.LeaseTTL != 5*time.Second || r.cfg.CommitMargin != 10*time.Second+clockSkewMax {
		t.Fatalf("a router over a shard with a 5s lease: lease TTL %v, margin %v; want 5s and 2 × 5s + %v", r.cfg.LeaseTTL, r.cfg.CommitMargin, clockSkewMax)
	}
	_, err = NewRouter(ctx, RouterConfig{URLs: urls, Coordinator: "ttl", LeaseTTL: 3 * time.Second})
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("shard %s's lease TTL is 5s", m.Shards[1])) {
		t.Fatalf("a router given a 3s lease TTL over a shard with 5s: %v; want it refused", err)
	}
}

// TestShardMapHashIsFNV1a: the map's hash, computed in place without
// allocating, is hash/fnv's FNV-1a 64 of sku\0condition\0source.
func TestShardMapHashIsFNV1a(t *testing.T) {
	m, _ := NewShardMap(7)
	for i := range 500 {
		g := inventory.GroupKey{SKU: fmt.Sprintf("sku-%d", i*31), Condition: []string{"new", "used", ""}[i%3], Source: fmt.Sprintf("src%d", i%5)}
		h := fnv.New64a()
		h.Write([]byte(g.SKU + "\x00" + g.Condition + "\x00" + g.Source))
		if got, want := m.index(g), int(h.Sum64()%7); got != want {
			t.Fatalf("%+v: index %d, hash/fnv says %d", g, got, want)
		}
	}
}

// TestOpCheckRefusesOtherShardsGroups: a node's check (engine CheckOp)
// refuses every op naming a group of another shard, any line of a hold or
// an order included, names the group's shard, lets the rest through
// without allocating, and is absent on a cluster of one shard.
func TestOpCheckRefusesOtherShardsGroups(t *testing.T) {
	m, _ := NewShardMap(3)
	if m.opCheck("s0") == nil || (ShardMap{}).opCheck("main") != nil {
		t.Fatal("a check only on maps of several shards")
	}
	if one, _ := NewShardMap(1); one.opCheck("s0") != nil {
		t.Fatal("a map of one shard: no check wanted")
	}
	check := m.opCheck("s1")
	var mine, theirs inventory.GroupKey
	for i := 0; mine.SKU == "" || theirs.SKU == ""; i++ {
		g := inventory.GroupKey{SKU: fmt.Sprintf("g%d", i), Condition: "new", Source: "own"}
		switch m.Of(g) {
		case "s1":
			mine = g
		case "s2":
			theirs = g
		}
	}
	row := func(g inventory.GroupKey) inventory.RowKey {
		return inventory.RowKey{SKU: g.SKU, Warehouse: "w1", Condition: g.Condition, Source: g.Source}
	}
	want := fmt.Sprintf("group %s/new/own belongs to shard s2, not s1", theirs.SKU)
	ops := func(g inventory.GroupKey) []inventory.Op {
		return []inventory.Op{inventory.Capture(g, 1), inventory.Release(row(g), 1), inventory.Stock(row(g), 1, 1),
			inventory.Get(row(g)), inventory.Available(g),
			inventory.Hold("h", 1000, []inventory.Demand{{Group: mine, N: 1}, {Group: g, N: 1}}),
			inventory.Order([]inventory.Demand{{Group: g, N: 1}, {Group: mine, N: 1}})}
	}
	for _, op := range ops(theirs) {
		if got := check(&op); got != want {
			t.Errorf("%s naming s2's group on s1: %q; want %q", op.Kind, got, want)
		}
	}
	for _, op := range append(ops(mine), inventory.Confirm("h"), inventory.Cancel("h"), inventory.HoldGet("h")) {
		if got := check(&op); got != "" {
			t.Errorf("%s of this shard's: %q; want it let through", op.Kind, got)
		}
		if n := testing.AllocsPerRun(100, func() { check(&op) }); n != 0 {
			t.Errorf("%s of this shard's: %v allocations per check; want none", op.Kind, n)
		}
	}
}
