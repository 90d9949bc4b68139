package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"allot/client"
	"allot/inventory"
	"allot/server/servertest"
)

func TestShardMap(t *testing.T) {
	if _, err := NewShardMap(0); err == nil {
		t.Fatal("0 shards accepted")
	}
	if _, err := NewShardMap(ShardsMax + 1); err == nil {
		t.Fatal("too many shards accepted")
	}
	m, err := NewShardMap(3)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.check(); err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for i := range 3000 {
		g := groupKey(fmt.Sprintf("sku-%d", i))
		s := m.Of(g)
		if s != m.Of(g) {
			t.Fatal("Of is not stable")
		}
		count[s]++
	}
	for _, s := range m.Shards {
		if count[s] < 800 {
			t.Fatalf("shard %s holds %d of 3000 groups: %v", s, count[s], count)
		}
	}
	// The hash is part of the map's format: a group must not move.
	if got := m.Of(groupKey("sku-1")); got != m.Shards[m.index(groupKey("sku-1"))] {
		t.Fatal(got)
	}
	bad := ShardMap{Shards: []string{"s0", "s0"}, Hash: HashFNV1a}
	if bad.check() == nil {
		t.Fatal("a map naming a shard twice accepted")
	}
	if (ShardMap{Shards: []string{"s0"}, Hash: "crc32"}).check() == nil {
		t.Fatal("an unknown hash accepted")
	}
}

// shardedCluster is a shard map of n shards, each served by one node.
type shardedCluster struct {
	t      testing.TB
	urls   string
	shards map[string]*shardCluster

	stopped sync.Once
}

func newSharded(t testing.TB, n int) *shardedCluster {
	t.Helper()
	_, urls := privateNATS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m, err := CreateShardMap(ctx, urls, n)
	if err != nil {
		t.Fatal(err)
	}
	sc := &shardedCluster{t: t, urls: urls, shards: map[string]*shardCluster{}}
	t.Cleanup(sc.stop)
	for _, s := range m.Shards {
		c := newNamedShard(t, s)
		c.start("n1")
		c.waitPrimary("", 30*time.Second)
		sc.shards[s] = c
	}
	return sc
}

// stop stops the shards and deletes the map and the records (once).
func (sc *shardedCluster) stop() {
	sc.stopped.Do(func() {
		for _, c := range sc.shards {
			c.stop()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		nc, js, err := connect(sc.urls, "test cleanup")
		if err == nil {
			js.DeleteKeyValue(ctx, shardMapBucket)
			js.DeleteKeyValue(ctx, ordersBucket)
			nc.Close()
		}
	})
}

func (sc *shardedCluster) router(coord string, mod func(*RouterConfig)) *Router {
	sc.t.Helper()
	cfg := RouterConfig{URLs: sc.urls, Coordinator: coord, Client: client.Config{PoolSize: 8, DialTimeout: time.Second}}
	if mod != nil {
		mod(&cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := NewRouter(ctx, cfg)
	if err != nil {
		sc.t.Fatal(err)
	}
	sc.t.Cleanup(r.Close)
	return r
}

// orderCheck is what the cross-shard check needs to know of one order.
type orderCheck struct {
	key   string
	lines []inventory.Demand
	code  inventory.Code // the reply's code; 255 when the call failed (crash, error)
	// allocs: the reply's allocations (an order on one shard is one
	// ORDER, with no hold to read back).
	allocs []inventory.Allocation
}

// checkOrders reads every order's parts and the groups' totals, and
// returns each violation: an order confirmed on some shards but not all,
// a part still held, an OK reply whose order is not confirmed, an
// INSUFFICIENT one with a part confirmed, and a group whose total plus
// its confirmed units is not its initial stock.
func checkOrders(ctx context.Context, r *Router, orders []orderCheck, groups []inventory.GroupKey, initial int64) []string {
	var bad []string
	confirmed := map[inventory.GroupKey]int64{}
	for _, o := range orders {
		base := r.orderHold(o.key)
		parts := r.split(o.lines)
		if len(parts) == 1 {
			for _, a := range o.allocs {
				confirmed[a.Row.Group()] += a.Count
			}
			continue
		}
		// Every attempt's hold id (record.Attempt): only the last may
		// hold anything.
		holds := []string{base}
		if rec, _, found, err := r.load(ctx, base); err != nil {
			bad = append(bad, fmt.Sprintf("order %s: read its record: %v", o.key, err))
		} else if found {
			for n := 1; n <= rec.Attempt; n++ {
				holds = append(holds, fmt.Sprintf("%s#%d", base, n))
			}
		}
		for ai, hold := range holds {
			last := ai == len(holds)-1
			states := map[inventory.HoldState]int{}
			notFound := 0
			for _, p := range parts {
				res, err := r.call(ctx, p.shard, inventory.HoldGet(hold))
				if err != nil {
					bad = append(bad, fmt.Sprintf("order %s: read shard %s: %v", o.key, p.shard, err))
					continue
				}
				if res.Code == inventory.CodeNotFound {
					notFound++
					continue
				}
				states[res.State]++
				if res.State == inventory.HoldConfirmed {
					for _, a := range res.Allocations {
						confirmed[a.Row.Group()] += a.Count
					}
				}
			}
			switch {
			case states[inventory.HoldHeld] > 0:
				bad = append(bad, fmt.Sprintf("order %s (%s): %d parts still held (%v)", o.key, hold, states[inventory.HoldHeld], states))
			case !last && states[inventory.HoldConfirmed] > 0:
				bad = append(bad, fmt.Sprintf("order %s: attempt %s, not the last, confirmed (%v)", o.key, hold, states))
			case states[inventory.HoldConfirmed] > 0 && states[inventory.HoldConfirmed] < len(parts):
				bad = append(bad, fmt.Sprintf("order %s: confirmed on %d of %d shards (%v, %d unknown)", o.key, states[inventory.HoldConfirmed], len(parts), states, notFound))
			case last && o.code == inventory.CodeOK && states[inventory.HoldConfirmed] != len(parts):
				bad = append(bad, fmt.Sprintf("order %s: acknowledged but not confirmed (%v)", o.key, states))
			case o.code == inventory.CodeInsufficient && states[inventory.HoldConfirmed] > 0:
				bad = append(bad, fmt.Sprintf("order %s: answered insufficient but confirmed", o.key))
			}
		}
	}
	for _, g := range groups {
		res, err := r.Do(ctx, inventory.Available(g), nil)
		if err != nil {
			bad = append(bad, fmt.Sprintf("group %v: %v", g, err))
			continue
		}
		if res.Count+confirmed[g] != initial {
			bad = append(bad, fmt.Sprintf("group %v: available %d + confirmed %d != initial %d", g, res.Count, confirmed[g], initial))
		}
	}
	return bad
}

// runCrashingOrders runs n orders from workers routers, each of which
// "dies" where crash says (its router is dropped and a new one under the
// same name runs Recover); it returns the orders.
func runCrashingOrders(t *testing.T, sc *shardedCluster, groups []inventory.GroupKey, workers, n int, seed uint64,
	mod func(*RouterConfig), crash func(rng *rand.Rand, step string, part int) bool) []orderCheck {
	t.Helper()
	var mu sync.Mutex
	var orders []orderCheck
	var wg sync.WaitGroup
	var failed error
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			coord := fmt.Sprintf("c%d", w)
			r := sc.router(coord, mod)
			var hook func(string, int) bool
			r.crash = func(step string, part int) bool { return hook(step, part) }
			for i := range n / workers {
				k := 2 + rng.IntN(2)
				lines := make([]inventory.Demand, k)
				for j := range lines {
					lines[j] = inventory.Demand{Group: groups[rng.IntN(len(groups))], N: 1 + rng.Int64N(3)}
				}
				o := orderCheck{key: fmt.Sprintf("%s-%d-%d", coord, seed, i), lines: lines, code: 255}
				dead := false
				hook = func(step string, part int) bool {
					if !dead && crash(rng, step, part) {
						dead = true
					}
					return dead
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				res, err := r.Order(ctx, o.key, lines)
				cancel()
				if err == nil {
					o.code, o.allocs = res.Code, res.Allocations
				}
				mu.Lock()
				orders = append(orders, o)
				if err != nil && !errors.Is(err, errCrashed) && failed == nil {
					failed = fmt.Errorf("order %s: %w", o.key, err)
				}
				mu.Unlock()
				if dead {
					// The coordinator died: a new one under its name
					// finishes what it left.
					r.Close()
					r = sc.router(coord, mod)
					r.crash = func(step string, part int) bool { return hook(step, part) }
					hook = func(string, int) bool { return false }
					ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
					if _, err := r.Recover(ctx); err != nil && !strings.Contains(err.Error(), "partial") {
						mu.Lock()
						if failed == nil {
							failed = fmt.Errorf("recover %s: %w", coord, err)
						}
						mu.Unlock()
					}
					cancel()
				}
			}
		}()
	}
	wg.Wait()
	if failed != nil {
		t.Fatal(failed)
	}
	return orders
}

func stockGroups(t testing.TB, r *Router, prefix string, n int, perRow int64) []inventory.GroupKey {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var groups []inventory.GroupKey
	for i := range n {
		g := groupKey(fmt.Sprintf("%s%d", prefix, i))
		groups = append(groups, g)
		for _, w := range []string{"w1", "w2"} {
			if res, err := r.Do(ctx, inventory.Stock(g.Row(w), perRow, 100), nil); err != nil || res.Code != inventory.CodeOK {
				t.Fatalf("stock %v: %v %v", g, res.Code, err)
			}
		}
	}
	return groups
}

// crashAnywhere kills a coordinator at one step in ten, at any step.
func crashAnywhere(rng *rand.Rand, step string, part int) bool {
	switch step {
	case "begun", "hold", "decided", "confirm", "cancel":
		return rng.IntN(25) == 0
	}
	return false
}

func TestCrossShardOrdersWithCoordinatorCrashes(t *testing.T) {
	sc := newSharded(t, 3)
	r := sc.router("setup", nil)
	groups := stockGroups(t, r, "x", 12, 40)
	// Other nodes refuse a shard the map does not name.
	out, err := exec.Command(sc.shards["s0"].bin, "serve", "--cluster", sc.urls, "--shard", "s9",
		"--data", t.TempDir(), "--resp", freePort(t), "--http", freePort(t)).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "not s9") {
		t.Fatalf("a node for shard s9 was not refused: %v\n%s", err, out)
	}

	orders := runCrashingOrders(t, sc, groups, 4, 240, 1, nil, crashAnywhere)
	// A last sweep recovers every coordinator's leftovers (those whose
	// router never came back).
	sweeper := sc.router("sweeper", func(c *RouterConfig) { c.RecoverAfter = time.Millisecond })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := sweeper.Recover(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ok, short, crashed, cross := 0, 0, 0, 0
	for _, o := range orders {
		switch o.code {
		case inventory.CodeOK:
			ok++
		case inventory.CodeInsufficient:
			short++
		default:
			crashed++
		}
		if len(r.split(o.lines)) > 1 {
			cross++
		}
	}
	t.Logf("%d orders (%d across shards): %d ok, %d insufficient, %d crashed; last sweep %+v", len(orders), cross, ok, short, crashed, st)
	if ok == 0 || short == 0 || crashed == 0 || cross < len(orders)/2 {
		t.Fatalf("the run did not exercise every case: %d ok, %d insufficient, %d crashed, %d across shards", ok, short, crashed, cross)
	}
	if bad := checkOrders(ctx, r, orders, groups, 80); len(bad) > 0 {
		t.Fatalf("%d violations:\n%s", len(bad), strings.Join(bad, "\n"))
	}
}

// TestCrossShardCheckFailsWithoutDecisionRecord proves the check's power:
// a coordinator that confirms before it records the decision, and dies
// among the confirms, leaves orders confirmed on some shards only.
func TestCrossShardCheckFailsWithoutDecisionRecord(t *testing.T) {
	sc := newSharded(t, 2)
	r := sc.router("setup", nil)
	groups := stockGroups(t, r, "f", 6, 1000)
	crashSecond := func(rng *rand.Rand, step string, part int) bool { return step == "confirm" && part == 1 }
	orders := runCrashingOrders(t, sc, groups, 2, 20, 2, func(c *RouterConfig) { c.Fault = FaultNoDecision }, crashSecond)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	bad := checkOrders(ctx, r, orders, groups, 2000)
	if len(bad) == 0 {
		t.Fatal("the check passed a coordinator that confirms before recording its decision")
	}
	t.Logf("caught %d violations, e.g. %s", len(bad), bad[0])
	// The same crashes with the decision recorded first pass.
	groups = stockGroups(t, r, "g", 6, 1000)
	orders = runCrashingOrders(t, sc, groups, 2, 20, 3, nil, crashSecond)
	if bad := checkOrders(ctx, r, orders, groups, 2000); len(bad) > 0 {
		t.Fatalf("%d violations with the decision recorded:\n%s", len(bad), strings.Join(bad, "\n"))
	}
}

// TestCrossShardHoldExpiresWithoutRecovery: a coordinator that dies
// after holding and is never recovered leaves holds that expire by their
// TTL on every shard; a cross-shard hold confirms and cancels as one.
func TestCrossShardHolds(t *testing.T) {
	sc := newSharded(t, 2)
	r := sc.router("h", func(c *RouterConfig) { c.HoldTTL = 5 * time.Second; c.CommitMargin = 3 * time.Second })
	groups := stockGroups(t, r, "h", 8, 10)
	a, b := crossPair(t, r, groups)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	lines := []inventory.Demand{{Group: a, N: 3}, {Group: b, N: 4}, {Group: a, N: 1}}

	// A hold across shards, confirmed.
	res, err := r.Hold(ctx, "cart-1", time.Minute, lines)
	if err != nil || res.Code != inventory.CodeOK || len(res.Allocations) == 0 || res.ExpiresAt == 0 {
		t.Fatalf("hold: %+v %v", res, err)
	}
	if res.Allocations[0].Row.Group() != a {
		t.Fatalf("allocations not in request order: %+v", res.Allocations)
	}
	if got, _ := r.Hold(ctx, "cart-1", time.Minute, lines[:2]); got.Code != inventory.CodeMismatch {
		t.Fatalf("a repeat with other lines: %v", got.Code)
	}
	if g, err := r.HoldGet(ctx, "cart-1"); err != nil || g.State != inventory.HoldHeld {
		t.Fatalf("hold.get: %+v %v", g, err)
	}
	if c, err := r.Confirm(ctx, "cart-1"); err != nil || c.Code != inventory.CodeOK {
		t.Fatalf("confirm: %+v %v", c, err)
	}
	if c, _ := r.Cancel(ctx, "cart-1"); c.Code != inventory.CodeConfirmed {
		t.Fatalf("cancel after confirm: %v", c.Code)
	}
	if av, _ := r.Do(ctx, inventory.Available(a), nil); av.Count != 20-4 {
		t.Fatalf("group a holds %d, want 16", av.Count)
	}
	// One short line: nothing held anywhere, the reply names it.
	res, err = r.Hold(ctx, "cart-2", time.Minute, []inventory.Demand{{Group: a, N: 1}, {Group: b, N: 100}})
	if err != nil || res.Code != inventory.CodeInsufficient || res.ShortLine != 1 {
		t.Fatalf("short hold: %+v %v", res, err)
	}
	if av, _ := r.Do(ctx, inventory.Available(a), nil); av.Count != 16 {
		t.Fatalf("a short hold left group a at %d, want 16", av.Count)
	}
	// Cancelled as one.
	if res, err = r.Hold(ctx, "cart-3", time.Minute, lines); err != nil || res.Code != inventory.CodeOK {
		t.Fatalf("hold: %+v %v", res, err)
	}
	if c, err := r.Cancel(ctx, "cart-3"); err != nil || c.Code != inventory.CodeOK {
		t.Fatalf("cancel: %+v %v", c, err)
	}
	if c, _ := r.Confirm(ctx, "cart-3"); c.Code != inventory.CodeCancelled {
		t.Fatalf("confirm after cancel: %v", c.Code)
	}
	// A coordinator that dies among the holds, finished by
	// `allot shards recover`: what it held is cancelled.
	r.crash = func(step string, part int) bool { return step == "hold" && part == 1 }
	if _, err := r.Order(ctx, "half", lines); !errors.Is(err, errCrashed) {
		t.Fatalf("order: %v", err)
	}
	r.crash = nil
	first := r.m.Of(lines[0].Group)
	if get, err := r.call(ctx, first, inventory.HoldGet(r.orderHold("half"))); err != nil || get.State != inventory.HoldHeld {
		t.Fatalf("the dead coordinator's first part: %+v %v", get, err)
	}
	out, err := exec.Command(sc.shards["s0"].bin, "shards", "recover", "--cluster", sc.urls, "--after", "1ms").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "cancelled 1") {
		t.Fatalf("allot shards recover: %v %s", err, out)
	}
	if get, err := r.call(ctx, first, inventory.HoldGet(r.orderHold("half"))); err != nil || get.State != inventory.HoldCancelled {
		t.Fatalf("the dead coordinator's first part after the recovery: %+v %v", get, err)
	}
	if av, _ := r.Do(ctx, inventory.Available(a), nil); av.Count != 16 {
		t.Fatalf("group a holds %d after the recovery, want 16", av.Count)
	}
	// A coordinator that dies holding, never recovered: the TTL returns
	// the units on both shards.
	r.crash = func(step string, part int) bool { return step == "decided" }
	if _, err := r.Order(ctx, "lost", lines); !errors.Is(err, errCrashed) {
		t.Fatalf("order: %v", err)
	}
	r.crash = nil
	hold := r.orderHold("lost")
	for _, g := range []inventory.GroupKey{a, b} {
		get, err := r.call(ctx, r.m.Of(g), inventory.HoldGet(hold))
		if err != nil || get.State != inventory.HoldHeld {
			t.Fatalf("the dead coordinator's hold on %v: %+v %v", g, get, err)
		}
	}
	time.Sleep(5500 * time.Millisecond)
	for _, g := range []inventory.GroupKey{a, b} {
		get, err := r.call(ctx, r.m.Of(g), inventory.HoldGet(hold))
		if err != nil || get.State != inventory.HoldExpired {
			t.Fatalf("the dead coordinator's hold on %v after its TTL: %+v %v", g, get, err)
		}
	}
	if av, _ := r.Do(ctx, inventory.Available(a), nil); av.Count != 16 {
		t.Fatalf("group a holds %d after the expiry, want 16", av.Count)
	}
}

// BenchmarkShardedOrders measures orders of two lines over 60 groups at
// 1, 2 and 3 shards of one node each: at 1 shard every order is one ORDER;
// at 2 and 3 most span shards and run as two-phase holds (a record, a
// HOLD per shard, the decision, a CONFIRM per shard, the final state).
// On one 2-core machine the shards share the cores and the disk, so this
// shows the cost of the protocol, not scaling.
//
//	go test ./cluster -run '^$' -bench ShardedOrders -benchtime 2000x
func BenchmarkShardedOrders(b *testing.B) {
	for _, n := range []int{1, 2, 3} {
		sc := newSharded(b, n)
		r := sc.router("bench", nil)
		groups := stockGroups(b, r, "b", 60, 1<<40)
		b.Run(fmt.Sprintf("shards=%d", n), func(b *testing.B) {
			var cross, failed atomic.Int64
			var first atomic.Value
			var seq atomic.Uint64
			b.SetParallelism(8)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				rng := rand.New(rand.NewPCG(seq.Add(1), 7))
				for pb.Next() {
					a, c := groups[rng.IntN(len(groups))], groups[rng.IntN(len(groups))]
					lines := []inventory.Demand{{Group: a, N: 1}, {Group: c, N: 1}}
					if r.m.Of(a) != r.m.Of(c) {
						cross.Add(1)
					}
					ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
					res, err := r.Order(ctx, "", lines)
					cancel()
					if err != nil || res.Code != inventory.CodeOK {
						if failed.Add(1) == 1 {
							first.Store(fmt.Sprintf("%v %v", res.Code, err))
						}
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "orders/s")
			b.ReportMetric(float64(cross.Load())/float64(b.N), "cross-shard")
			if failed.Load() > 0 {
				b.Fatalf("%d of %d orders failed, the first: %v", failed.Load(), b.N, first.Load())
			}
		})
		sc.stop()
	}
}

// TestCrossShardOrdersAcrossFailover kills the primary of one shard while
// orders run across shards: the router follows the lease to the standby,
// every acknowledged order is confirmed on every shard, and no order is
// left half done.
func TestCrossShardOrdersAcrossFailover(t *testing.T) {
	sc := newSharded(t, 2)
	s0 := sc.shards["s0"]
	s0.start("n2")
	r := sc.router("setup", nil)
	groups := stockGroups(t, r, "k", 10, 1000)
	killed := make(chan string, 1)
	go func() {
		time.Sleep(2 * time.Second)
		id := s0.primary()
		if p := s0.nodes[id]; p != nil {
			p.kill(syscall.SIGKILL)
		}
		killed <- id
	}()
	never := func(*rand.Rand, string, int) bool { return false }
	// A failover on a loaded machine can take several lease TTLs.
	patient := func(c *RouterConfig) { c.RetryFor = 45 * time.Second }
	orders := runCrashingOrders(t, sc, groups, 4, 400, 4, patient, never)
	id := <-killed
	if id == "" {
		t.Fatal("shard s0 had no primary to kill")
	}
	after := s0.waitPrimary(id, 30*time.Second)
	t.Logf("killed %s of shard s0; %s took over; %d orders", id, after.id, len(orders))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if bad := checkOrders(ctx, r, orders, groups, 2000); len(bad) > 0 {
		t.Fatalf("%d violations:\n%s", len(bad), strings.Join(bad, "\n"))
	}
}

// TestShardsCommand drives `allot shards` against the private cluster: a
// map made once, shown, refused a change, and a recovery with nothing to do.
func TestShardsCommand(t *testing.T) {
	_, urls := privateNATS(t)
	bin := servertest.BuildAllot(t)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if nc, js, err := connect(urls, "test cleanup"); err == nil {
			js.DeleteKeyValue(ctx, shardMapBucket)
			js.DeleteKeyValue(ctx, ordersBucket)
			nc.Close()
		}
	})
	run := func(args ...string) (string, error) {
		out, err := exec.Command(bin, append([]string{"shards"}, append(args, "--cluster", urls)...)...).CombinedOutput()
		return string(out), err
	}
	if out, err := run("show"); err != nil || !strings.Contains(out, "no shard map") {
		t.Fatalf("show before init: %v %s", err, out)
	}
	if out, err := run("init", "--count", "2"); err != nil || !strings.Contains(out, "shards: s0 s1") {
		t.Fatalf("init: %v %s", err, out)
	}
	if out, err := run("init", "--count", "2"); err != nil {
		t.Fatalf("init again with the same count: %v %s", err, out)
	}
	if out, err := run("init", "--count", "3"); err == nil || !strings.Contains(out, "cannot change") {
		t.Fatalf("init with another count: %v %s", err, out)
	}
	if out, err := run("show"); err != nil || !strings.Contains(out, "shards: s0 s1") {
		t.Fatalf("show: %v %s", err, out)
	}
	if out, err := run("recover", "--after", "1ms"); err != nil || !strings.Contains(out, "confirmed 0, cancelled 0, partial 0") {
		t.Fatalf("recover: %v %s", err, out)
	}
}

// TestCrossShardOrderRepeatedAfterOutage: an order that meets a shard
// with no node fails without being applied; once the shard is back, the
// same key runs it again (a new attempt) and it is applied once.
func TestCrossShardOrderRepeatedAfterOutage(t *testing.T) {
	sc := newSharded(t, 2)
	r := sc.router("outage", func(c *RouterConfig) { c.RetryFor = time.Second })
	groups := stockGroups(t, r, "u", 8, 100)
	a, b := crossPair(t, r, groups)
	lines := []inventory.Demand{{Group: a, N: 2}, {Group: b, N: 3}}
	down := sc.shards[r.m.Of(b)]
	node := down.nodes["n1"]
	node.kill(syscall.SIGKILL)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := r.Order(ctx, "k-outage", lines)
	if err == nil || !(errors.Is(err, client.ErrUnavailable) || errors.Is(err, client.ErrOutcomeUnknown)) {
		t.Fatalf("an order with a shard down: %v", err)
	}
	t.Logf("with shard %s down: %v", down.shard, err)
	if av, _ := r.Do(ctx, inventory.Available(a), nil); av.Count != 200 && av.Count != 198 {
		t.Fatalf("group a at %d", av.Count)
	}
	down.start("n1")
	down.waitPrimary("", 30*time.Second)
	res, err := r.Order(ctx, "k-outage", lines)
	if err != nil || res.Code != inventory.CodeOK || len(res.Allocations) == 0 {
		t.Fatalf("the same key once the shard is back: %+v %v", res, err)
	}
	again, err := r.Order(ctx, "k-outage", lines)
	if err != nil || again.Code != inventory.CodeOK || len(again.Allocations) != len(res.Allocations) {
		t.Fatalf("a repeat of the applied order: %+v %v", again, err)
	}
	rec, _, _, _ := r.load(ctx, r.orderHold("k-outage"))
	if rec == nil || rec.Attempt != 1 || rec.State != stConfirmed {
		t.Fatalf("record %+v: want attempt 1, confirmed", rec)
	}
	orders := []orderCheck{{key: "k-outage", lines: lines, code: inventory.CodeOK}}
	if bad := checkOrders(ctx, r, orders, []inventory.GroupKey{a, b}, 200); len(bad) > 0 {
		t.Fatalf("%d violations:\n%s", len(bad), strings.Join(bad, "\n"))
	}
}

// crossPair returns the first group and one on another shard.
func crossPair(t *testing.T, r *Router, groups []inventory.GroupKey) (a, b inventory.GroupKey) {
	t.Helper()
	for _, g := range groups[1:] {
		if r.m.Of(g) != r.m.Of(groups[0]) {
			return groups[0], g
		}
	}
	t.Fatal("every group is on one shard")
	return a, b
}

// The coordinator kill test runs the test binary again as a coordinator
// process (TestMain sees coordinatorChildEnv): it sends cross-shard orders
// one after another and prints "start <key> <sku> <n> <sku> <n>" before
// each and "done <key> <code>" after, until it is killed.
const coordinatorChildEnv = "ALLOT_TEST_COORDINATOR_CHILD"

func coordinatorChild() {
	urls, prefix, pairs := os.Getenv("ALLOT_TEST_URLS"), os.Getenv("ALLOT_TEST_PREFIX"), strings.Split(os.Getenv("ALLOT_TEST_PAIRS"), ",")
	ctx := context.Background()
	r, err := NewRouter(ctx, RouterConfig{URLs: urls, Coordinator: "killed", Client: client.Config{PoolSize: 4}})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	for i := 0; ; i++ {
		skus := strings.Split(pairs[rng.IntN(len(pairs))], ":")
		na, nb := 1+rng.Int64N(3), 1+rng.Int64N(3)
		key := fmt.Sprintf("%s-%d", prefix, i)
		fmt.Printf("start %s %s %d %s %d\n", key, skus[0], na, skus[1], nb)
		res, err := r.Order(ctx, key, []inventory.Demand{{Group: groupKey(skus[0]), N: na}, {Group: groupKey(skus[1]), N: nb}})
		if err != nil {
			fmt.Printf("error %s %v\n", key, err)
			continue
		}
		fmt.Printf("done %s %d\n", key, res.Code)
	}
}

// TestCrossShardCoordinatorKilled SIGKILLs a coordinator process at a
// random moment while it sends orders across two shards, three times;
// each time a router under its name recovers what it left. Every order
// is then all or nothing, none is left held, and the groups balance.
func TestCrossShardCoordinatorKilled(t *testing.T) {
	sc := newSharded(t, 2)
	r := sc.router("check", nil)
	groups := stockGroups(t, r, "p", 10, 1000)
	var pairs []string
	for i, g := range groups {
		for _, h := range groups[i+1:] {
			if r.m.Of(g) != r.m.Of(h) {
				pairs = append(pairs, g.SKU+":"+h.SKU)
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var orders []orderCheck
	inFlight := 0
	for round := range 3 {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), coordinatorChildEnv+"=1", "ALLOT_TEST_URLS="+sc.urls,
			fmt.Sprintf("ALLOT_TEST_PREFIX=r%d", round), "ALLOT_TEST_PAIRS="+strings.Join(pairs, ","))
		var out bytes.Buffer
		var mu sync.Mutex
		cmd.Stdout = writerFunc(func(b []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return out.Write(b) })
		cmd.Stderr = cmd.Stdout
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Kill it at a random moment once it is under way (a few orders
		// acknowledged: a loaded machine starts it slowly).
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			mu.Lock()
			n := strings.Count(out.String(), "\ndone ")
			mu.Unlock()
			if n >= 5 {
				break
			}
		}
		time.Sleep(time.Duration(rand.IntN(1000)) * time.Millisecond)
		cmd.Process.Kill()
		cmd.Wait()
		mu.Lock()
		text := out.String()
		mu.Unlock()
		byKey := map[string]int{}
		started, done := 0, 0
		for _, line := range strings.Split(text, "\n") {
			f := strings.Fields(line)
			switch {
			case len(f) == 6 && f[0] == "start":
				na, _ := strconv.ParseInt(f[3], 10, 64)
				nb, _ := strconv.ParseInt(f[5], 10, 64)
				byKey[f[1]] = len(orders)
				orders = append(orders, orderCheck{key: f[1], code: 255,
					lines: []inventory.Demand{{Group: groupKey(f[2]), N: na}, {Group: groupKey(f[4]), N: nb}}})
				started++
			case len(f) == 3 && f[0] == "done":
				i, ok := byKey[f[1]]
				c, err := strconv.Atoi(f[2])
				if !ok || err != nil {
					continue // a line cut by the kill
				}
				orders[i].code = inventory.Code(c)
				done++
			case len(f) > 0 && f[0] == "error":
				t.Fatalf("the coordinator failed: %s", line)
			}
		}
		if done == 0 {
			t.Fatalf("round %d: the coordinator acknowledged no order before the kill:\n%s", round, text)
		}
		inFlight += started - done
		rec := sc.router("killed", nil)
		st, err := rec.Recover(ctx)
		if err != nil {
			t.Fatal(err)
		}
		rec.Close()
		t.Logf("round %d: %d orders started, %d acknowledged; recovery %+v", round, started, done, st)
	}
	if inFlight == 0 {
		t.Fatal("no kill landed in the middle of an order")
	}
	if bad := checkOrders(ctx, r, orders, groups, 2000); len(bad) > 0 {
		t.Fatalf("%d violations:\n%s", len(bad), strings.Join(bad, "\n"))
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }
