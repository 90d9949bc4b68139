package services

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"

	"allot/store"
)

// NATS names the 3-node NATS cluster with JetStream; NATSNodes its nodes,
// which Up, Down, Kill and Status also take one by one (a test kills one
// node).
const NATS = "nats"

// NATSNodes are the names of the cluster's nodes.
var NATSNodes = []string{"nats-1", "nats-2", "nats-3"}

// NATSVersion is the nats-server release Up builds and runs. Debian's
// package (2.9) predates `sync_interval: always`; the module is built from
// the Go module proxy at this pinned version (its version list is refused,
// so neither @latest nor go install work).
const NATSVersion = "v2.11.9"

// NATSURL lists the client addresses of the cluster Up starts with the
// default Config, as nats.Connect takes them.
const NATSURL = "nats://127.0.0.1:14220,nats://127.0.0.1:14230,nats://127.0.0.1:14240"

// natsServer is one node of the cluster. Node i (1..3) listens for clients
// on 14210+10i and for the cluster's routes on the next port, all on
// loopback; every node lists every route, and JetStream keeps its data in
// the node's directory with `sync_interval: always`: every write to a
// stream is fsync'd before it is acknowledged (the cluster's "fsync"
// durability; nats-server's default syncs every two minutes).
//
// The binary is built once per version into the user's cache directory
// ($XDG_CACHE_HOME or ~/.cache, allot/nats-server/<version>/nats-server),
// outside the checkout, so that CI on the same machine and colleagues'
// tests do not build it again (a build takes a few minutes here).
type natsServer struct{ node int }

func natsNode(name string) (natsServer, bool) {
	for i, n := range NATSNodes {
		if n == name {
			return natsServer{node: i + 1}, true
		}
	}
	return natsServer{}, false
}

func (s natsServer) name() string                 { return NATSNodes[s.node-1] }
func (s natsServer) basePort() int                { return 14210 + 10*s.node }
func (natsServer) packages() []string             { return nil }
func (natsServer) runAs() string                  { return "" }
func (natsServer) exeNames() []string             { return []string{"nats-server"} }
func (natsServer) pidFile(in *instance) string    { return filepath.Join(in.dir, "nats-server.pid") }
func (natsServer) logFile(in *instance) string    { return filepath.Join(in.dir, "nats-server.log") }
func (natsServer) stopSignal() syscall.Signal     { return syscall.SIGTERM }
func (natsServer) installed() bool                { return true } // built by start when missing
func (s natsServer) clusterPort(in *instance) int { return in.port + 1 }

// NATSBinary is where the nats-server binary of NATSVersion is kept.
func NATSBinary() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("services: nats: no cache directory: %w", err)
	}
	return filepath.Join(dir, "allot", "nats-server", NATSVersion, "nats-server"), nil
}

// buildNATS builds nats-server into NATSBinary unless it is there.
func buildNATS(ctx context.Context, log io.Writer) (string, error) {
	bin, err := NATSBinary()
	if err != nil {
		return "", err
	}
	return buildGoModule(ctx, log, "nats", "github.com/nats-io/nats-server/v2", NATSVersion, bin, nil)
}

// natsConfig is a node's configuration file.
func (s natsServer) config(in *instance) string {
	var routes []string
	for i := range NATSNodes {
		peer := natsServer{node: i + 1}
		routes = append(routes, "nats-route://127.0.0.1:"+strconv.Itoa(peer.basePort()+in.cfg.portOffset+1))
	}
	return fmt.Sprintf(`# Written by allot services; rewritten on every start.
server_name: allot-%s
listen: 127.0.0.1:%d
jetstream {
  store_dir: %q
  # fsync every write before its acknowledgement
  sync_interval: always
}
cluster {
  name: allot
  listen: 127.0.0.1:%d
  routes: [%s]
}
`, s.name(), in.port, filepath.Join(in.dir, "jetstream"), s.clusterPort(in), strings.Join(routes, ", "))
}

func (s natsServer) start(ctx context.Context, in *instance) (int, error) {
	bin, err := buildNATS(ctx, in.cfg.Log)
	if err != nil {
		return 0, err
	}
	if err := portFree(s.clusterPort(in)); err != nil {
		return 0, fmt.Errorf("port %d (the node's cluster port) is taken: %w", s.clusterPort(in), err)
	}
	conf := filepath.Join(in.dir, "nats-server.conf")
	if err := writeShared(conf, []byte(s.config(in))); err != nil {
		return 0, err
	}
	pid, err := startBackground(ctx, in.user, in.dir, s.logFile(in), bin, "-c", conf)
	if err != nil {
		return 0, err
	}
	if err := writeShared(s.pidFile(in), []byte(strconv.Itoa(pid)+"\n")); err != nil {
		return pid, err
	}
	return pid, nil
}

// probe connects as a client and round-trips a PING. It does not ask
// JetStream: a first node answers before the cluster has a quorum, and
// Up starts the nodes one after the other.
func (natsServer) probe(ctx context.Context, in *instance) (probeResult, error) {
	timeout := probeTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = max(time.Until(dl), time.Millisecond)
	}
	nc, err := nats.Connect("nats://"+in.addr(), nats.Timeout(timeout), nats.NoReconnect(), nats.Name("allot services probe"))
	if err != nil {
		return probeResult{}, err
	}
	defer nc.Close()
	if err := nc.FlushTimeout(timeout); err != nil {
		return probeResult{}, err
	}
	return probeResult{version: "nats-server " + nc.ConnectedServerVersion(), durability: store.DurabilityFsync}, nil
}

// fixedDurability: the cluster always runs with sync_interval: always.
func (natsServer) fixedDurability() (store.Durability, string) {
	return store.DurabilityFsync, "durability is always fsync (JetStream sync_interval: always)"
}

// setDurability is never called (fixedDurability): there is nothing to
// change.
func (natsServer) setDurability(context.Context, *instance, store.Durability) (bool, error) {
	return false, nil
}
