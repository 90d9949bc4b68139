package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"allot/client"
	"allot/cluster"
	"allot/internal/fsinfo"
	"allot/inventory"
	"allot/services"
	"allot/store"
	"allot/store/remote"
)

// What the allot-cluster kill audit kills (--faults), each round the next
// of the list (the moment of the kill is the audit's random draw).
const (
	faultKillPrimary = "kill-primary" // SIGKILL the node holding the lease
	faultKillStandby = "kill-standby" // SIGKILL a node that does not
	faultKillNATS    = "kill-nats"    // SIGKILL one node of the NATS cluster
	// SIGSTOP the primary (a machine that hangs) until a standby took
	// over, then SIGCONT: it must step down, acknowledging nothing.
	faultPausePrimary = "pause-primary"
	// SIGSTOP one NATS node (its sockets open, nothing answered) until a
	// primary takes writes again, then SIGCONT.
	faultPauseNATS = "pause-nats"
)

var clusterFaults = []string{faultKillPrimary, faultKillStandby, faultKillNATS, faultPausePrimary, faultPauseNATS}

// parseFaults checks a --faults list.
func parseFaults(s string) ([]string, error) {
	var out []string
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if !slices.Contains(clusterFaults, f) {
			return nil, fmt.Errorf("--faults: unknown fault %q (want a comma list of %s)", f, strings.Join(clusterFaults, ", "))
		}
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out, nil
}

// clusterNodes is how many allot nodes the audit's shard has.
const clusterNodes = 3

// clusterReady bounds how long a restart may take to give the shard a
// primary that takes writes again: the lease's TTL (3 s) and a catch-up,
// with room for a loaded machine.
const clusterReady = 60 * time.Second

// clusterServer is the kill audit's replicated shard: three allot serve
// --cluster nodes on the audit's private NATS cluster (killServices: its
// own folder and ports, so killing one of its NATS nodes never touches
// the shared cluster). Kill crashes what the round's fault names; Start
// restarts it and returns once the shard has a primary that takes writes.
// The audit's judgment is the single node's: an acknowledged op must be in
// the primary's state after any of these kills.
type clusterServer struct {
	bin    string
	up     services.Config
	urls   string
	shard  string
	dir    string
	d      store.Durability
	faults []string
	rng    *rand.Rand
	log    io.Writer
	in     *cluster.Inspector
	nodes  []*clusterNode
	// env is added to every node's environment: a test's
	// ALLOT_CLUSTER_FAULT, to prove the audit catches a broken shard.
	env   []string
	round int // Kills so far: round r kills what faults[r%len(faults)] names
	// restart undoes the last Kill.
	restart func(ctx context.Context) error
}

type clusterNode struct {
	id, resp, http, data string
	cmd                  *exec.Cmd
	exited               chan struct{}
}

// startCluster brings up the private NATS cluster and a fresh shard of
// clusterNodes nodes in durability d, and waits for its primary.
func startCluster(ctx context.Context, d store.Durability, faults []string, seed uint64, log io.Writer, env ...string) (*clusterServer, error) {
	bin, err := remote.Binary("")
	if err != nil {
		return nil, err
	}
	up, err := killServices(d)
	if err != nil {
		return nil, err
	}
	if log != nil {
		up.Log = log
	}
	if err := services.Up(ctx, up, services.NATS); err != nil {
		return nil, fmt.Errorf("allot-cluster: the audit's NATS cluster: %w", err)
	}
	var urls []string
	for _, n := range services.NATSNodes {
		a, err := services.Addr(up, n)
		if err != nil {
			return nil, err
		}
		urls = append(urls, "nats://"+a)
	}
	dir, err := fsinfo.TempDataDir("cluster-")
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = io.Discard
	}
	c := &clusterServer{bin: bin, up: up, urls: strings.Join(urls, ","), dir: dir, d: d, faults: faults,
		rng: rand.New(rand.NewPCG(seed, 0x636c7573)), log: log, env: env,
		shard: fmt.Sprintf("kill%d", time.Now().UnixNano()%1e12)}
	if c.in, err = cluster.Inspect(c.urls, c.shard); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	addrs, err := freeAddrs(2 * clusterNodes)
	if err != nil {
		c.close()
		return nil, err
	}
	for i := range clusterNodes {
		n := &clusterNode{id: fmt.Sprintf("n%d", i+1), data: filepath.Join(dir, fmt.Sprintf("n%d", i+1)),
			resp: addrs[2*i], http: addrs[2*i+1]}
		c.nodes = append(c.nodes, n)
		if err := c.startNode(n); err != nil {
			c.close()
			return nil, err
		}
	}
	if _, err := c.ready(ctx, true); err != nil {
		c.close()
		return nil, err
	}
	return c, nil
}

// freeAddrs returns n distinct free loopback addresses, all picked while
// the others are held: a node binds its addresses only once NATS is
// ready, seconds after it starts, so one picked after another node's
// start could be that node's too ("address already in use").
func freeAddrs(n int) ([]string, error) {
	addrs := make([]string, 0, n)
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer ln.Close()
		addrs = append(addrs, ln.Addr().String())
	}
	return addrs, nil
}

// startNode starts n (again, on its data directory), its output appended
// to a log in its directory.
func (c *clusterServer) startNode(n *clusterNode) error {
	if err := os.MkdirAll(n.data, 0o755); err != nil {
		return err
	}
	logf, err := os.OpenFile(filepath.Join(c.dir, n.id+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	n.cmd = exec.Command(c.bin, "serve", "--cluster", c.urls, "--shard", c.shard, "--node-id", n.id,
		"--data", n.data, "--durability", string(c.d), "--resp", n.resp, "--http", n.http)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ALLOT_") {
			n.cmd.Env = append(n.cmd.Env, kv)
		}
	}
	n.cmd.Env = append(n.cmd.Env, c.env...)
	n.cmd.Stdout, n.cmd.Stderr = logf, logf
	n.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := n.cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("allot-cluster: start node %s: %w", n.id, err)
	}
	n.exited = make(chan struct{})
	go func() { n.cmd.Wait(); logf.Close(); close(n.exited) }()
	return nil
}

func (n *clusterNode) alive() bool {
	if n.exited == nil {
		return false
	}
	select {
	case <-n.exited:
		return false
	default:
		return true
	}
}

func (n *clusterNode) kill() {
	if n.alive() {
		n.cmd.Process.Signal(syscall.SIGKILL)
		<-n.exited
	}
}

// signal sends sig to a live node.
func (n *clusterNode) signal(sig syscall.Signal) {
	if n.alive() {
		n.cmd.Process.Signal(sig)
	}
}

// ready waits until the lease names a live node that acknowledges a
// write and, with all, every node answers PING (a restarted node has
// rejoined); without all, nodes that are down are not waited for.
func (c *clusterServer) ready(ctx context.Context, all bool) (cluster.Holder, error) {
	ctx, cancel := context.WithTimeout(ctx, clusterReady)
	defer cancel()
	var last error
	for ctx.Err() == nil {
		var h cluster.Holder
		if h, last = c.probe(ctx, all); last == nil {
			return h, nil
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
	return cluster.Holder{}, fmt.Errorf("allot-cluster: not ready within %v: %v\n%s", clusterReady, last, c.logTails())
}

// probe returns the primary once it acknowledged a write.
func (c *clusterServer) probe(ctx context.Context, all bool) (cluster.Holder, error) {
	for _, n := range c.nodes {
		if !n.alive() {
			if all {
				return cluster.Holder{}, fmt.Errorf("node %s exited", n.id)
			}
			continue
		}
		if err := ping(ctx, n.resp); err != nil && all {
			return cluster.Holder{}, fmt.Errorf("node %s: %w", n.id, err)
		}
	}
	h, err := c.primary(ctx)
	if err != nil {
		return h, err
	}
	cl, err := client.New(client.Config{Addr: h.RESP, DialTimeout: time.Second})
	if err != nil {
		return h, err
	}
	defer cl.Close()
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	// A row of its own, which the audit's judgment never looks at.
	key := inventory.RowKey{SKU: "allot-cluster-probe", Warehouse: "w", Condition: "new", Source: "probe"}
	_, err = cl.Stock(pctx, key, 1, 1)
	return h, err
}

func ping(ctx context.Context, addr string) error {
	cl, err := client.New(client.Config{Addr: addr, DialTimeout: time.Second})
	if err != nil {
		return err
	}
	defer cl.Close()
	pctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	return cl.Ping(pctx)
}

// primary returns the lease's holder, a node of this shard that is alive.
func (c *clusterServer) primary(ctx context.Context) (cluster.Holder, error) {
	h, found, err := c.in.Primary(ctx)
	switch {
	case err != nil:
		return h, err
	case !found:
		return h, errors.New("nobody holds the lease")
	}
	n := c.node(h.Node)
	if n == nil || !n.alive() {
		return h, fmt.Errorf("the lease names %s, which is not running", h.Node)
	}
	return h, nil
}

func (c *clusterServer) node(id string) *clusterNode {
	for _, n := range c.nodes {
		if n.id == id {
			return n
		}
	}
	return nil
}

// Kill crashes what the round's fault names, once every node
// is up: the last round's victim must have rejoined.
func (c *clusterServer) Kill(ctx context.Context) error {
	h, err := c.ready(ctx, true)
	if err != nil {
		return fmt.Errorf("the node killed in the last round did not rejoin: %w", err)
	}
	fault := c.faults[c.round%len(c.faults)]
	c.round++
	switch fault {
	case faultKillPrimary, faultKillStandby:
		victim := c.node(h.Node)
		if fault == faultKillStandby {
			var standbys []*clusterNode
			for _, n := range c.nodes {
				if n.id != h.Node {
					standbys = append(standbys, n)
				}
			}
			victim = standbys[c.rng.IntN(len(standbys))]
		}
		victim.kill()
		fmt.Fprintf(c.log, "allot-cluster: %s: SIGKILL of node %s\n", fault, victim.id)
		c.restart = func(ctx context.Context) error { return c.startNode(victim) }
	case faultPausePrimary:
		victim := c.node(h.Node)
		victim.signal(syscall.SIGSTOP)
		fmt.Fprintf(c.log, "allot-cluster: %s: SIGSTOP of node %s\n", fault, victim.id)
		c.restart = func(ctx context.Context) error {
			victim.signal(syscall.SIGCONT)
			return nil
		}
	case faultPauseNATS:
		name := services.NATSNodes[c.rng.IntN(len(services.NATSNodes))]
		if _, err := services.Pause(ctx, c.up, name); err != nil {
			return err
		}
		fmt.Fprintf(c.log, "allot-cluster: %s: SIGSTOP of NATS node %s\n", fault, name)
		c.restart = func(ctx context.Context) error {
			_, err := services.Resume(ctx, c.up, name)
			return err
		}
	case faultKillNATS:
		name := services.NATSNodes[c.rng.IntN(len(services.NATSNodes))]
		if _, err := services.Kill(ctx, c.up, name); err != nil {
			return err
		}
		fmt.Fprintf(c.log, "allot-cluster: %s: SIGKILL of NATS node %s\n", fault, name)
		c.restart = func(ctx context.Context) error { return services.Up(ctx, c.up, name) }
	}
	return nil
}

// Start waits until the shard has a primary that takes writes again (for
// kill-primary, a standby that took over), then restarts what Kill
// crashed. That node's rejoining is waited for by the next Kill (ready
// with all), so that the round is judged first: a node that cannot
// rejoin (its journal holds ops the shard's log lost) fails the audit
// after the lost ops were counted.
func (c *clusterServer) Start(ctx context.Context) error {
	restart := c.restart
	c.restart = nil
	if _, err := c.ready(ctx, false); err != nil {
		return err
	}
	if restart != nil {
		return restart(ctx)
	}
	return nil
}

// open connects the audit to the shard's primary.
func (c *clusterServer) open(ctx context.Context, workers int, timeout time.Duration) (store.Store, error) {
	h, err := c.ready(ctx, false)
	if err != nil {
		return nil, err
	}
	st, err := remote.Open(ctx, store.Config{Addr: h.RESP, Durability: c.d, Workers: workers, Timeout: timeout}, remote.Options{})
	if err != nil {
		return nil, err
	}
	return &clusterStore{Store: st, c: c}, nil
}

// clusterStore is the audit's store of a round: the remote store of the
// primary it opened on, whose Rows reads from whichever node is the
// primary when it is called. After a kill-primary the round's own address
// is the restarted victim's, a standby that may not have rejoined yet,
// and a store opened afresh would not know which rows the round loaded.
type clusterStore struct {
	*remote.Store
	c *clusterServer
}

func (s *clusterStore) Rows(ctx context.Context) ([]inventory.Row, error) {
	h, err := s.c.ready(ctx, false)
	if err != nil {
		return nil, err
	}
	return s.Store.RowsAt(ctx, h.RESP)
}

func (c *clusterServer) logTails() string {
	var b strings.Builder
	for _, n := range c.nodes {
		out, _ := os.ReadFile(filepath.Join(c.dir, n.id+".log"))
		if len(out) > 1500 {
			out = out[len(out)-1500:]
		}
		fmt.Fprintf(&b, "--- node %s:\n%s\n", n.id, out)
	}
	return b.String()
}

// clusterCleanup bounds how long close waits for the audit's JetStream
// to delete the shard: after a NATS node was paused or killed, its meta
// leader may take seconds to be elected again and caught up, and until
// then every delete is refused ("JetStream system temporarily
// unavailable") or unanswered. A variable for a test.
var clusterCleanup = 30 * time.Second

// clusterCleanupTry bounds one attempt, so that a request sent to a node
// that does not answer yet is sent again (the connection moves on to a
// node that does).
const clusterCleanupTry = 5 * time.Second

// close stops the nodes, deletes the shard's JetStream resources and its
// data directories, saying in the audit's log what it could not remove.
// The NATS cluster stays up for the next audit; the caller stops it at the
// end (stopKillServers).
func (c *clusterServer) close() {
	if err := c.cleanup(); err != nil {
		fmt.Fprintf(c.log, "allot-cluster: %v\n", err)
	}
}

// cleanup is close returning what it left behind (nil when nothing). A
// second call does nothing.
func (c *clusterServer) cleanup() error {
	for _, n := range c.nodes {
		n.kill()
	}
	var err error
	if c.in != nil {
		err = c.deleteShard()
		c.in.Close()
		c.in = nil
	}
	os.RemoveAll(c.dir)
	return err
}

// deleteShard deletes the shard's stream, lease bucket and snapshot store,
// trying again until JetStream answers (clusterCleanup at most). Deleting
// is idempotent (what is gone already counts as deleted), and every error
// is retried: none of them is final while the cluster recovers, and the
// bound caps what a lasting one costs.
func (c *clusterServer) deleteShard() error {
	ctx, cancel := context.WithTimeout(context.Background(), clusterCleanup)
	defer cancel()
	// The last fault's node is continued or restarted if the audit stopped
	// before its round's Start did (an interrupted or failed round): a
	// cluster missing a node elects a meta leader slowly or not at all.
	// Up is idempotent, and its error only matters if deleting fails. It is
	// not asked for a durability: the audit's Up set it already.
	up := c.up
	up.Durability = ""
	upErr := services.Up(ctx, up, services.NATS)
	var err error
	for {
		tctx, tcancel := context.WithTimeout(ctx, clusterCleanupTry)
		err = c.in.DeleteShard(tctx)
		tcancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	if upErr != nil {
		err = errors.Join(err, upErr)
	}
	where := filepath.Join(c.up.Dir, "nats-*", "jetstream")
	return fmt.Errorf("shard %s not deleted: the audit's JetStream refused or did not answer for %v (%s); "+
		"its stream, lease bucket and snapshot store (the JetStream streams whose names contain %s) may remain in %s; "+
		"they change nothing for later audits (each makes a shard of its own) but take disk: "+
		"to remove them, delete %s once no audit runs (the audit stops that NATS cluster when it ends)",
		c.shard, clusterCleanup, strings.ReplaceAll(err.Error(), "\n", "; "), c.shard, where, where)
}
