package remote_test

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"allot/bench"
	_ "allot/bench/kv"
	"allot/client"
	"allot/inventory"
	"allot/server/servertest"
	"allot/services"
	"allot/store"
	"allot/store/remote"
	"allot/store/storetest"
)

// clusterNATSOffset moves this package's private NATS cluster
// (services.NATSNodes at 14220.. move to 16137..), clear of the shared
// one and of the other packages' private ones (cluster's 533, the kill
// audit's 2000, services' own tests). ALLOT_CLUSTER_TEST_NATS_OFFSET
// overrides it, as in package cluster's tests, for two runs at once.
const clusterNATSOffset = 1917

func natsOffset() int {
	if v, err := strconv.Atoi(os.Getenv("ALLOT_CLUSTER_TEST_NATS_OFFSET")); err == nil && v > 0 {
		return v
	}
	return clusterNATSOffset
}

// standbyShard is a shard of three `allot serve --cluster` nodes on a
// private NATS cluster, all stopped when the test ends.
type standbyShard struct {
	primary, standby string            // RESP addresses
	kill             map[string]func() // by RESP address: SIGKILL the node
}

// startStandbyShard brings up the private NATS cluster and a fresh shard
// of three nodes in durability d, and waits until one node takes writes
// and a standby refuses them naming it. It skips the test when NATS cannot
// come up (and fails it in CI).
func startStandbyShard(t *testing.T, d store.Durability) standbyShard {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a NATS cluster and three allot nodes")
	}
	bin := servertest.BuildAllot(t)
	dir := t.TempDir()
	ncfg := services.WithPortOffset(services.Config{Dir: filepath.Join(dir, "nats"), Timeout: time.Minute}, natsOffset())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	t.Cleanup(func() { services.Down(context.Background(), ncfg, services.NATS) })
	if err := services.Up(ctx, ncfg, services.NATS); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("nats: %v", err)
		}
		t.Skipf("nats could not be brought up (CI=true makes this a failure): %v", err)
	}
	var urls []string
	for _, n := range services.NATSNodes {
		a, err := services.Addr(ncfg, n)
		if err != nil {
			t.Fatal(err)
		}
		urls = append(urls, "nats://"+a)
	}
	shard := fmt.Sprintf("a17rw%d", time.Now().UnixNano()%1e9)
	var nodes []string
	kill := map[string]func(){}
	for i := range 3 {
		id := fmt.Sprintf("n%d", i+1)
		addr, stop := startNode(t, bin, dir, id, strings.Join(urls, ","), shard, d)
		nodes = append(nodes, addr)
		kill[addr] = stop
	}
	sh := waitStandby(t, nodes)
	sh.kill = kill
	return sh
}

// startNode starts one node and waits until it answers PING; a node that
// lost one of its ports to another process before it bound it is started
// again on new ones. It returns the node's RESP address and what kills
// it (also done when the test ends).
func startNode(t *testing.T, bin, dir, id, urls, shard string, d store.Durability) (string, func()) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		resp, http := freeAddr(t), freeAddr(t)
		logPath := filepath.Join(dir, fmt.Sprintf("%s-%d.log", id, attempt))
		f, err := os.Create(logPath)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "serve", "--cluster", urls, "--shard", shard, "--node-id", id,
			"--data", filepath.Join(dir, id), "--resp", resp, "--http", http, "--durability", string(d))
		cmd.Stdout, cmd.Stderr = f, f
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); f.Close(); close(exited) }()
		stop := func() {
			cmd.Process.Signal(syscall.SIGKILL)
			<-exited
		}
		t.Cleanup(stop)
		err = waitPing(resp, exited)
		if err == nil {
			return resp, stop
		}
		tail, _ := os.ReadFile(logPath)
		if !strings.Contains(string(tail), "address already in use") || attempt == 3 {
			t.Fatalf("node %s: %v\n%s", id, err, tail)
		}
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// waitPing waits until the node at addr answers PING, or its process
// exits.
func waitPing(addr string, exited <-chan struct{}) error {
	c, err := client.New(client.Config{Addr: addr, PoolSize: 1, DialTimeout: time.Second})
	if err != nil {
		return err
	}
	defer c.Close()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Ping(ctx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("exited at start: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("does not answer: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// probeRow is the row the shard's roles are found with (a source no test
// loads).
var probeRow = inventory.RowKey{SKU: "probe", Warehouse: "w", Condition: "c", Source: "audit17-probe"}

// stockOn sends one STOCK.SET of probeRow straight to the node at addr (a
// Conn: no redirect followed).
func stockOn(addr string) (inventory.Result, error) {
	c, err := client.New(client.Config{Addr: addr, PoolSize: 1, DialTimeout: time.Second})
	if err != nil {
		return inventory.Result{}, err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	cn, err := c.Conn(ctx)
	if err != nil {
		return inventory.Result{}, err
	}
	defer cn.Close()
	return cn.Stock(ctx, probeRow, 1, 1)
}

// waitStandby waits until one of nodes takes a write and another refuses
// it naming that one.
func waitStandby(t *testing.T, nodes []string) standbyShard {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	var last []string
	for time.Now().Before(deadline) {
		last = last[:0]
		primary := ""
		refused := map[string]string{}
		for _, n := range nodes {
			r, err := stockOn(n)
			switch addr, named := client.PrimaryOf(err); {
			case err == nil && r.Code == inventory.CodeOK:
				primary = n
			case named:
				refused[n] = addr
			}
			last = append(last, fmt.Sprintf("%s: %v %v", n, r.Code, err))
		}
		for n, named := range refused {
			if primary != "" && named == primary {
				return standbyShard{primary: primary, standby: n}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no primary and standby naming it within 2 minutes: %s", strings.Join(last, "; "))
	return standbyShard{}
}

// openAt opens the allot-cluster store with --addr at addr.
func openAt(t *testing.T, addr string, d store.Durability, workers, pipeline int) store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), remote.ClusterStore, store.Config{Addr: addr, Durability: d, Workers: workers, Pipeline: pipeline})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestAudit17ClusterRecordsAtAStandby: allot-cluster with --addr at a
// standby. The record workloads (kv, rw) and the search workload's
// catalog load connected to --addr and stayed there: every record write
// and every CATALOG.SET was refused as "not primary", and the record
// sessions did not follow the refusal (Load and the inventory sessions
// did). Now record calls go to the primary a refusal names (pipelined
// ones too: sets and reads, safe to send again), the space's sessions and
// its read-back start there, and the catalog goes where Load found the
// primary.
func TestAudit17ClusterRecordsAtAStandby(t *testing.T) {
	const d = store.DurabilityWrite
	sh := startStandbyShard(t, d)
	t.Logf("primary %s, standby %s", sh.primary, sh.standby)

	t.Run("Records", func(t *testing.T) {
		// In write mode a soft-lock read is the hard one (rowrecords.Check).
		storetest.RunRecords(t, func(t *testing.T, d store.Durability) store.Store {
			return openAt(t, sh.standby, d, 1, 1)
		}, storetest.RecordsCaps{Unlocked: true, Locked: true, InsertOverwrites: true, SoftLock: true, Durability: d})
	})

	// The bench's kv workload, writes then reads, with its checker reading
	// every record back.
	for _, kind := range []string{"WRITE", "READ"} {
		t.Run("KV/"+kind, func(t *testing.T) {
			const workers, pipeline = 4, 16
			st := openAt(t, sh.standby, d, workers, pipeline)
			defer st.Close()
			reg, err := bench.LookupKind("kv")
			if err != nil {
				t.Fatal(err)
			}
			k := reg.New()
			fs := flag.NewFlagSet("kv", flag.ContinueOnError)
			k.RegisterFlags(fs)
			if err := fs.Parse([]string{"--request-type", kind, "--keys", "2000", "--lines=false"}); err != nil {
				t.Fatal(err)
			}
			cfg := bench.KindConfig{RunConfig: bench.RunConfig{Workers: workers, Pipeline: pipeline, Store: remote.ClusterStore, Durability: d}, Ops: 6000, Seed: 1}
			if err := cfg.Validate(); err != nil {
				t.Fatal(err)
			}
			if err := k.Validate(cfg); err != nil {
				t.Fatal(err)
			}
			res, err := k.Run(context.Background(), cfg, st)
			if err != nil {
				t.Fatalf("kv %s at a standby: %v", kind, err)
			}
			if !res.Check.OK || res.Errors != 0 || res.Ops != int64(cfg.Ops) {
				t.Fatalf("kv %s at a standby: %d ops, %d errors, check %+v", kind, res.Ops, res.Errors, res.Check)
			}
		})
	}

	t.Run("Search", func(t *testing.T) {
		st := openAt(t, sh.standby, d, 1, 1)
		defer st.Close()
		recs, rows := storetest.TaggedCatalog("a17", 300)
		ctx := context.Background()
		if err := st.(store.Searcher).LoadCatalog(ctx, recs, rows); err != nil {
			t.Fatalf("loading the catalog at a standby: %v", err)
		}
		se, err := st.Session(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer se.Close()
		diff, err := storetest.SessionSearchDiff(ctx, se, recs, rows)
		if err != nil {
			t.Fatal(err)
		}
		if diff != "" {
			t.Fatalf("searching the catalog loaded at a standby: %s", diff)
		}
	})

	// The read-back reads at the primary the writes went to, not at the
	// standby --addr names (which applies the log a moment behind): with
	// that standby gone, it reads every record written. Last: it kills
	// the standby.
	t.Run("ReadBackAtThePrimary", func(t *testing.T) {
		ctx := context.Background()
		st := openAt(t, sh.standby, d, 1, 1)
		defer st.Close()
		sp, err := st.(store.RWStore).RWOpen(ctx, store.RWOptions{Lock: store.RWLockHard, Durable: d == store.DurabilityFsync, Confirm: true})
		if err != nil {
			t.Fatal(err)
		}
		defer sp.Close()
		se, err := sp.Session(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer se.Close()
		want := make([]store.RWRecord, 40)
		for i := range want {
			want[i] = store.RWRecord{Key: fmt.Sprintf("r%02d", i), Value: int64(i + 1)}
		}
		// One op at a time (a refusal of one op, followed), then pipelined.
		if err := se.Write(ctx, want[:2]); err != nil {
			t.Fatal(err)
		}
		if err := se.(store.RWPipeliner).PipelineWrite(ctx, want[2:]); err != nil {
			t.Fatal(err)
		}
		sh.kill[sh.standby]()
		got, err := sp.Records(ctx)
		if err != nil {
			t.Fatalf("reading the records back with the standby --addr names gone: %v", err)
		}
		byKey := map[string]int64{}
		for _, r := range got {
			byKey[r.Key] = r.Value
		}
		for _, w := range want {
			if v, ok := byKey[w.Key]; !ok || v != w.Value {
				t.Errorf("record %s read back as %d (found %v), written %d", w.Key, v, ok, w.Value)
			}
		}
		if len(got) != len(want) {
			t.Errorf("%d records read back, %d written", len(got), len(want))
		}
	})
}
