package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"allot/client"
	"allot/inventory"
	"allot/server/servertest"
	"allot/services"
)

// The failover tests run real processes: a private 3-node NATS cluster
// (its own directory and ports, so that killing one of its nodes never
// touches the shared one) and `allot serve --cluster` children, each test
// on a shard of its own.

func TestMain(m *testing.M) {
	if os.Getenv(coordinatorChildEnv) == "1" {
		coordinatorChild() // a coordinator process for the kill test; never returns
	}
	code := servertest.Main(m)
	natsOnce.stopAll()
	os.Exit(code)
}

// natsPortOffset moves the private cluster's ports (services.NATSNodes at
// 14220.. move to 14753..), clear of the shared cluster and of the
// services package's own test cluster.
const natsPortOffset = 533

// natsOffset is natsPortOffset, or ALLOT_CLUSTER_TEST_NATS_OFFSET when
// set: two runs of these tests at once (two checkouts, two helpers) each
// need a private cluster of their own, and the second skipped every test
// ("address already in use").
func natsOffset() int {
	if v, err := strconv.Atoi(os.Getenv("ALLOT_CLUSTER_TEST_NATS_OFFSET")); err == nil && v > 0 {
		return v
	}
	return natsPortOffset
}

type natsCluster struct {
	once sync.Once
	cfg  services.Config
	urls string
	err  error
	dir  string
}

var natsOnce natsCluster

func (n *natsCluster) stopAll() {
	if n.dir != "" {
		services.Down(context.Background(), n.cfg, services.NATS)
		os.RemoveAll(n.dir)
	}
}

// privateNATS brings the private NATS cluster up once per test process.
func privateNATS(t testing.TB) (services.Config, string) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a NATS cluster and allot servers")
	}
	natsOnce.once.Do(func() {
		natsOnce.dir, natsOnce.err = os.MkdirTemp("", "allot-cluster-nats-")
		if natsOnce.err != nil {
			return
		}
		natsOnce.cfg = services.WithPortOffset(services.Config{Dir: natsOnce.dir, Timeout: time.Minute}, natsOffset())
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		natsOnce.err = services.Up(ctx, natsOnce.cfg, services.NATS)
		var urls []string
		for _, n := range services.NATSNodes {
			a, _ := services.Addr(natsOnce.cfg, n)
			urls = append(urls, "nats://"+a)
		}
		natsOnce.urls = strings.Join(urls, ",")
	})
	if natsOnce.err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("nats: %v", natsOnce.err)
		}
		t.Skipf("nats could not be brought up (CI=true makes this a failure): %v", natsOnce.err)
	}
	return natsOnce.cfg, natsOnce.urls
}

// shardCluster is one test's shard: its nodes and a NATS connection to
// read the lease and the log.
type shardCluster struct {
	t     testing.TB
	bin   string
	urls  string
	nats  services.Config
	shard string
	dir   string
	env   []string // extra environment of every node (a fault)
	nodes map[string]*nodeProc
	js    jetstream.JetStream
	names names

	stopped sync.Once
}

type nodeProc struct {
	id, resp, http, data string
	args                 []string
	cmd                  *exec.Cmd
	log                  string
	exited               chan struct{}
	cli                  *client.Client
}

func newShardCluster(t testing.TB, env ...string) *shardCluster {
	t.Helper()
	shard := fmt.Sprintf("t%d_%s", time.Now().UnixNano()%1e9, strings.NewReplacer("/", "_", " ", "_").Replace(t.Name()))
	if len(shard) > 32 {
		shard = shard[:32]
	}
	return newNamedShard(t, shard, env...)
}

// newFaultyShard is newShardCluster whose nodes run with the deliberate
// fault (Config.Fault) when it is not empty.
func newFaultyShard(t testing.TB, fault string) *shardCluster {
	t.Helper()
	if fault == "" {
		return newShardCluster(t)
	}
	return newShardCluster(t, "ALLOT_CLUSTER_FAULT="+fault)
}

// newNamedShard is newShardCluster for a shard of a given name.
func newNamedShard(t testing.TB, shard string, env ...string) *shardCluster {
	t.Helper()
	ncfg, urls := privateNATS(t)
	bin := servertest.BuildAllot(t)
	nc, err := nats.Connect(urls, nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	n, err := namesOf(shard)
	if err != nil {
		t.Fatal(err)
	}
	c := &shardCluster{t: t, bin: bin, urls: urls, nats: ncfg, shard: shard, dir: t.TempDir(), env: env,
		nodes: map[string]*nodeProc{}, js: js, names: n}
	t.Cleanup(c.stop)
	return c
}

// stop kills the nodes and deletes the shard's JetStream resources (once).
func (c *shardCluster) stop() {
	c.stopped.Do(func() {
		for _, p := range c.nodes {
			p.kill(syscall.SIGKILL)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c.js.DeleteStream(ctx, c.names.stream)
		c.js.DeleteKeyValue(ctx, c.names.lease)
		c.js.DeleteObjectStore(ctx, c.names.snaps)
	})
}

func freePort(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// start starts node id (again, on its data directory, when it ran before)
// and waits until it answers PING.
//
// freePort's ports are free when picked, not when the node binds them: an
// outgoing connection (the nodes' own, to NATS) may take one from the same
// ephemeral range in between. A node that exits at start because an
// address is in use is started again: on new ports at its first start, on
// the same ones (which its client points to) after a pause otherwise.
func (c *shardCluster) start(id string, extra ...string) *nodeProc {
	c.t.Helper()
	p := c.nodes[id]
	if p == nil {
		p = &nodeProc{id: id, resp: freePort(c.t), http: freePort(c.t), data: filepath.Join(c.dir, id)}
		c.nodes[id] = p
	}
	first := p.cli == nil
	for attempt := 1; ; attempt++ {
		err := c.launch(p, extra)
		if err == nil {
			return p
		}
		if !strings.Contains(p.tail(), "address already in use") || attempt == 5 {
			c.t.Fatalf("node %s: %v", id, err)
		}
		c.t.Logf("node %s: an address was taken (attempt %d); starting it again", id, attempt)
		if first {
			p.cli.Close()
			p.cli = nil
			p.resp, p.http = freePort(c.t), freePort(c.t)
		} else {
			time.Sleep(200 * time.Millisecond)
		}
	}
}

// launch starts p's process once and waits until it answers PING.
func (c *shardCluster) launch(p *nodeProc, extra []string) error {
	p.args = append([]string{"serve", "--cluster", c.urls, "--shard", c.shard, "--node-id", p.id, "--data", p.data,
		"--resp", p.resp, "--http", p.http}, extra...)
	p.log = filepath.Join(c.dir, fmt.Sprintf("%s-%d.log", p.id, time.Now().UnixNano()))
	f, err := os.Create(p.log)
	if err != nil {
		c.t.Fatal(err)
	}
	p.cmd = exec.Command(c.bin, p.args...)
	p.cmd.Stdout, p.cmd.Stderr = f, f
	p.cmd.Env = append(os.Environ(), c.env...)
	if err := p.cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	p.exited = make(chan struct{})
	go func() { p.cmd.Wait(); f.Close(); close(p.exited) }()
	if p.cli == nil {
		cli, err := client.New(client.Config{Addr: p.resp, PoolSize: 64, DialTimeout: time.Second})
		if err != nil {
			c.t.Fatal(err)
		}
		p.cli = cli
		c.t.Cleanup(func() { cli.Close() })
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := p.cli.Ping(ctx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-p.exited:
			return fmt.Errorf("exited at start: %s", p.tail())
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("does not answer: %v\n%s", err, p.tail())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (p *nodeProc) tail() string {
	b, _ := os.ReadFile(p.log)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

func (p *nodeProc) kill(sig syscall.Signal) {
	if p.cmd == nil || p.cmd.Process == nil {
		return
	}
	select {
	case <-p.exited:
		return
	default:
	}
	p.cmd.Process.Signal(sig)
	if sig == syscall.SIGKILL {
		<-p.exited
	}
}

// primary returns the node the lease names ("" when none).
// leaseHistory describes the lease's revisions the bucket still keeps
// (its TTL's worth, as many as its history holds): who wrote each and
// when, for a failing test's message (a node that renews after it was cut
// off, or nobody taking the lease).
func (c *shardCluster) leaseHistory() string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	kv, err := c.js.KeyValue(ctx, c.names.lease)
	if err != nil {
		return "the lease bucket: " + err.Error()
	}
	es, err := kv.History(ctx, leaseKey)
	if err != nil {
		return "the lease's history: " + err.Error()
	}
	var b strings.Builder
	for _, e := range es {
		var v leaseValue
		_ = json.Unmarshal(e.Value(), &v)
		fmt.Fprintf(&b, "rev %d %s at %s by %q\n", e.Revision(), e.Operation(), e.Created().Format("15:04:05.000"), v.Node)
	}
	return b.String()
}

func (c *shardCluster) primary() string {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	kv, err := c.js.KeyValue(ctx, c.names.lease)
	if err != nil {
		return ""
	}
	e, err := kv.Get(ctx, leaseKey)
	if err != nil {
		return ""
	}
	var v leaseValue
	if json.Unmarshal(e.Value(), &v) != nil {
		return ""
	}
	return v.Node
}

// waitPrimary waits until the lease names a node other than not, and that
// node acknowledges a mutation; it returns the node.
func (c *shardCluster) waitPrimary(not string, within time.Duration) *nodeProc {
	c.t.Helper()
	probe := c.probeRow()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if id := c.primary(); id != "" && id != not {
			p := c.nodes[id]
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			res, err := p.cli.Stock(ctx, probe, 0, 0)
			cancel()
			if err == nil && res.Code == inventory.CodeOK {
				return p
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.t.Fatalf("no primary other than %q within %v", not, within)
	return nil
}

// probeRow is the row waitPrimary stocks: one of this shard's groups. In
// a cluster of several shards a node refuses another shard's groups as
// invalid, at once, primary or not (ShardMap.opCheck).
func (c *shardCluster) probeRow() inventory.RowKey {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m, found, err := readShardMap(ctx, c.js)
	if err != nil || !found || !m.Has(c.shard) {
		return rowKey("probe", "w1")
	}
	for i := 0; ; i++ {
		k := rowKey(fmt.Sprintf("probe%d", i), "w1")
		if m.Of(k.Group()) == c.shard {
			return k
		}
	}
}

func rowKey(sku, warehouse string) inventory.RowKey {
	return inventory.RowKey{SKU: sku, Warehouse: warehouse, Condition: "new", Source: "s1"}
}

func groupKey(sku string) inventory.GroupKey {
	return inventory.GroupKey{SKU: sku, Condition: "new", Source: "s1"}
}
