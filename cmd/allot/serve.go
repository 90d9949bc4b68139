package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"allot/cluster"
	"allot/engine"
	"allot/internal/fsinfo"
	"allot/inventory"
	"allot/journal"
	"allot/server"
)

func init() {
	register(command{
		name:    "serve",
		summary: "run the engine as a server: RESP (the Redis protocol) and HTTP/JSON",
		run:     runServe,
	})
}

const serveAbout = `Serves the engine over RESP (any Redis client, redis-cli, pipelining) and
HTTP/JSON (the HTTP API: GET /openapi.json, also docs/openapi.json; the
commands: README). Binds loopback by default; a non-loopback address needs
--requirepass (RESP AUTH and an HTTP bearer token) or --insecure.

Every flag can also be set by the environment variable named in its help;
a flag given on the command line wins. SIGTERM or SIGINT stops accepting,
finishes the requests already received, makes the journal durable and exits
0. Startup logs name the data directory, the durability mode and the
addresses ("RESP on ADDR", "HTTP on ADDR").

With --cluster the node is the primary or a standby of one shard whose log,
lease and snapshots live in NATS JetStream (see README "Cluster"): a standby
serves reads and answers a mutation with "UNAVAILABLE not primary, primary
at ADDR"; it takes over when the primary's lease lapses.`

// envFlags registers flags whose default comes from an environment
// variable, and records bad values in variables so that they are reported
// with the variable's name.
type envFlags struct {
	fs      *flag.FlagSet
	errs    []error
	secrets []func()
}

func (e *envFlags) string(p *string, name, env, def, usage string) {
	if v, ok := os.LookupEnv(env); ok {
		def = v
	}
	e.fs.StringVar(p, name, def, usage+" (env "+env+")")
}

// secret is string for a value that --help must not print: the variable
// is read after parsing, when the flag was not given.
func (e *envFlags) secret(p *string, name, env, usage string) {
	e.fs.StringVar(p, name, "", usage+" (env "+env+")")
	e.secrets = append(e.secrets, func() {
		if v, ok := os.LookupEnv(env); ok && !e.given(name) {
			*p = v
		}
	})
}

// given reports whether flag name was given on the command line.
func (e *envFlags) given(name string) bool {
	given := false
	e.fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// origin names where flag name's value came from, for a message about a
// bad one: "--name" when it was given on the command line (or not at
// all), else "ENV (environment)".
func (e *envFlags) origin(name, env string) string {
	if _, ok := os.LookupEnv(env); ok && !e.given(name) {
		return env + " (environment)"
	}
	return "--" + name
}

func (e *envFlags) int(p *int, name, env string, def int, usage string) {
	if v, ok := os.LookupEnv(env); ok {
		n, err := strconv.Atoi(v)
		if err != nil {
			e.errs = append(e.errs, fmt.Errorf("%s=%q is not an integer", env, v))
		} else {
			def = n
		}
	}
	e.fs.IntVar(p, name, def, usage+" (env "+env+")")
}

func (e *envFlags) bool(p *bool, name, env string, usage string) {
	def := false
	if v, ok := os.LookupEnv(env); ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			e.errs = append(e.errs, fmt.Errorf("%s=%q is not a boolean", env, v))
		} else {
			def = b
		}
	}
	e.fs.BoolVar(p, name, def, usage+" (env "+env+")")
}

func (e *envFlags) duration(p *time.Duration, name, env string, def time.Duration, usage string) {
	if v, ok := os.LookupEnv(env); ok {
		d, err := time.ParseDuration(v)
		if err != nil {
			e.errs = append(e.errs, fmt.Errorf("%s=%q is not a duration", env, v))
		} else {
			def = d
		}
	}
	e.fs.DurationVar(p, name, def, usage+" (env "+env+")")
}

func runServe(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("serve", "[flags]", serveAbout, stderr)
	ef := &envFlags{fs: fs}
	var (
		cfg             server.Config
		dir, durability string
		pprofAddr       string
		shutdownTimeout time.Duration
		retention       time.Duration
		clusterCfg      cluster.Config
		snapshotOps     int
		keepSnapshots   int
		keysMax         int
		procs           int
	)
	ef.string(&dir, "data", "ALLOT_DATA", "", "data directory: journal and snapshots, created if missing (default: .allot/data of the allot checkout, else $XDG_DATA_HOME/allot/data; never the temporary folder)")
	ef.string(&durability, "durability", "ALLOT_DURABILITY", "fsync", "fsync (survives power loss), write (survives a process crash) or none")
	ef.string(&cfg.RESPAddr, "resp", "ALLOT_RESP", server.DefaultRESPAddr, "RESP listen address; empty disables RESP")
	ef.string(&cfg.HTTPAddr, "http", "ALLOT_HTTP", server.DefaultHTTPAddr, "HTTP listen address; empty disables HTTP")
	ef.secret(&cfg.Password, "requirepass", "ALLOT_REQUIREPASS", "password: RESP clients must AUTH, HTTP clients send 'Authorization: Bearer <password>'")
	ef.bool(&cfg.Insecure, "insecure", "ALLOT_INSECURE", "allow a non-loopback address without --requirepass")
	ef.int(&cfg.RequestBytesMax, "request-bytes-max", "ALLOT_REQUEST_BYTES_MAX", 64<<10, "largest RESP command (whole frame) or HTTP body, in bytes")
	ef.int(&cfg.ArgsMax, "args-max", "ALLOT_ARGS_MAX", 512, "most arguments in one RESP command, its name included (a HOLD or an ORDER of 64 lines has 259)")
	ef.int(&cfg.ConnectionsMax, "connections-max", "ALLOT_CONNECTIONS_MAX", 9000, "most open RESP connections, and most open HTTP connections: one more RESP connection is refused with -ERR max number of clients reached, one more HTTP connection is answered 503 unavailable and closed; the file limit (ulimit -n) must hold this many per protocol served plus 256, or allot serve refuses to start")
	ef.int(&cfg.PipelineDepthMax, "pipeline-depth-max", "ALLOT_PIPELINE_DEPTH_MAX", 1024, "most commands of one RESP connection in flight at once; a deeper pipeline is served in rounds of this many")
	ef.string(&cfg.RESPIO, "resp-io", "ALLOT_RESP_IO", "", "how RESP connections are served: loop (one epoll event loop for every connection, as Redis does; what would make it wait, a client that does not read or CHANGES ... BLOCK, moves to a goroutine; Linux only) or goroutine (a goroutine per connection) (default: loop on Linux)")
	ef.int(&cfg.ReadBufferBytesMax, "read-buffer-bytes-max", "ALLOT_READ_BUFFER_BYTES_MAX", 64<<10, "largest read buffer of one RESP connection, in bytes")
	ef.int(&cfg.ChangeStreamsMax, "change-streams-max", "ALLOT_CHANGE_STREAMS_MAX", 16, "most change-stream readers served at once (RESP CHANGES reads, and SSE /v1/changes streams while they read or are behind the newest event: a stream waiting for the next event holds none); one behind the newest events reads through a copy of the inventory; a new SSE stream that finds none free within 1s gets 503, one more CHANGES waits up to 10s, then -UNAVAILABLE")
	ef.duration(&cfg.AuthTimeout, "auth-timeout", "ALLOT_AUTH_TIMEOUT", 10*time.Second, "with --requirepass: how long a RESP connection may stay unauthenticated before it gets -ERR and is closed")
	ef.duration(&retention, "retention", "ALLOT_RETENTION", inventory.RetentionDefault*time.Millisecond, "how long finished holds and idempotency keys are remembered (by the engine's clock), so that repeats get their first answer")
	ef.int(&keysMax, "keys-max", "ALLOT_KEYS_MAX", engine.KeysMaxDefault, "most idempotency keys kept (each about 70 bytes of heap with a short reply, plus a longer reply's bytes: the default is 1-2 GB); past it a request with a new key is refused with -UNAVAILABLE (HTTP 503, applied false) until kept keys pass --retention, while a repeat of a kept key is answered")
	ef.int(&procs, "procs", "ALLOT_PROCS", 0, "Go processors (GOMAXPROCS) the server runs on; 0: one more than the CPUs it may use (the journal's fdatasync and the event loop's epoll wait each hold a thread in the kernel, and with no idle processor Go's scheduler hands theirs to another thread at every call: about a tenth of the server's CPU per op in fsync mode), but Go's own choice under a cgroup CPU quota, or GOMAXPROCS from the environment when that is set")
	ef.duration(&shutdownTimeout, "shutdown-timeout", "ALLOT_SHUTDOWN_TIMEOUT", 30*time.Second, "how long SIGTERM waits for connections to finish before closing them (0: closes them at once)")
	ef.string(&pprofAddr, "pprof", "ALLOT_PPROF", "", "serve Go's pprof profiles on this loopback address (empty: off)")
	ef.int(&snapshotOps, "snapshot-every-ops", "ALLOT_SNAPSHOT_EVERY_OPS", 1<<22, "journaled ops between two snapshots (recovery replays at most about this many)")
	ef.int(&keepSnapshots, "keep-snapshots", "ALLOT_KEEP_SNAPSHOTS", journal.KeepSnapshotsDefault, fmt.Sprintf("snapshots kept on disk, with the journal after the oldest of them (1..%d): the change stream (CHANGES, /v1/changes, allot relay) can resume from the oldest kept snapshot on, so a reader may fall this many snapshot intervals, less one, behind before its position is gone; each more keeps one more --snapshot-every-ops of journal on disk", journal.KeepSnapshotsMax))
	ef.string(&clusterCfg.URLs, "cluster", "ALLOT_CLUSTER", "", "NATS servers of the cluster, comma-separated (nats://127.0.0.1:14220,...): run as the primary or a standby of --shard; empty: a single node")
	ef.string(&clusterCfg.Shard, "shard", "ALLOT_SHARD", "main", "with --cluster: the shard this node serves (its stream ALLOT_<shard>, lease bucket ALLOT_<shard>_LEASE, snapshots ALLOT_<shard>_SNAP)")
	ef.string(&clusterCfg.NodeID, "node-id", "ALLOT_NODE_ID", "", "with --cluster: this node's name in the lease and the log (default: host-pid)")
	ef.string(&clusterCfg.Advertise, "advertise", "ALLOT_ADVERTISE", "", "with --cluster: the RESP address standbys send clients to when this node is the primary (default: the RESP listen address)")
	ef.string(&clusterCfg.AdvertiseHTTP, "advertise-http", "ALLOT_ADVERTISE_HTTP", "", "with --cluster: the same for HTTP (default: the HTTP listen address)")
	ef.duration(&clusterCfg.LeaseTTL, "lease-ttl", "ALLOT_LEASE_TTL", 3*time.Second, "with --cluster: the primary's lease; a standby takes over once it lapses (renewed every quarter of it)")
	if err := parseFlags(fs, args, stdout); err != nil {
		return err
	}
	for _, apply := range ef.secrets {
		apply()
	}
	if len(ef.errs) > 0 {
		return &exitError{code: 2, msg: errors.Join(ef.errs...).Error()}
	}
	// server.Config and cluster.Config read a zero as "the default"; here
	// the flags carry the defaults, so a zero (or less) was asked for, and
	// serving the default instead would ignore it.
	for _, v := range []struct {
		name, env string
		value     int
	}{
		{"request-bytes-max", "ALLOT_REQUEST_BYTES_MAX", cfg.RequestBytesMax},
		{"args-max", "ALLOT_ARGS_MAX", cfg.ArgsMax},
		{"connections-max", "ALLOT_CONNECTIONS_MAX", cfg.ConnectionsMax},
		{"pipeline-depth-max", "ALLOT_PIPELINE_DEPTH_MAX", cfg.PipelineDepthMax},
		{"read-buffer-bytes-max", "ALLOT_READ_BUFFER_BYTES_MAX", cfg.ReadBufferBytesMax},
		{"change-streams-max", "ALLOT_CHANGE_STREAMS_MAX", cfg.ChangeStreamsMax},
	} {
		if v.value < 1 {
			return &exitError{code: 2, msg: fmt.Sprintf("%s must be positive, got %d", ef.origin(v.name, v.env), v.value)}
		}
	}
	for _, v := range []struct {
		name, env string
		value     time.Duration
	}{
		{"auth-timeout", "ALLOT_AUTH_TIMEOUT", cfg.AuthTimeout},
		{"lease-ttl", "ALLOT_LEASE_TTL", clusterCfg.LeaseTTL},
	} {
		if v.name == "lease-ttl" && clusterCfg.URLs == "" {
			continue // refused below when given: a single node has no lease
		}
		if v.value <= 0 {
			return &exitError{code: 2, msg: fmt.Sprintf("%s must be positive, got %v", ef.origin(v.name, v.env), v.value)}
		}
	}
	if shutdownTimeout < 0 {
		return &exitError{code: 2, msg: fmt.Sprintf("%s must be 0 (close connections at once) or more, got %v", ef.origin("shutdown-timeout", "ALLOT_SHUTDOWN_TIMEOUT"), shutdownTimeout)}
	}
	if pprofAddr != "" {
		if err := checkPprofAddr(pprofAddr); err != nil {
			return &exitError{code: 2, msg: fmt.Sprintf("%s: %v", ef.origin("pprof", "ALLOT_PPROF"), err)}
		}
	}
	if clusterCfg.URLs == "" {
		// A cluster node's flags on a single node would be ignored.
		var given []string
		fs.Visit(func(f *flag.Flag) {
			switch f.Name {
			case "shard", "node-id", "advertise", "advertise-http", "lease-ttl":
				given = append(given, "--"+f.Name)
			}
		})
		if len(given) > 0 {
			return &exitError{code: 2, msg: strings.Join(given, ", ") + ": for a node of a cluster, with --cluster (a single node has no shard, node id or lease)"}
		}
	}
	mode, err := engine.ParseDurability(durability)
	if err != nil {
		return &exitError{code: 2, msg: fmt.Sprintf("%s: %v", ef.origin("durability", "ALLOT_DURABILITY"), err)}
	}
	cfg.Version = version()
	cfg.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	// Check the configuration before touching the data directory.
	check := cfg
	if err := check.Validate(); err != nil {
		return &exitError{code: 2, msg: err.Error()}
	}
	limit, err := raiseFileLimit(check.FilesNeeded())
	if err != nil {
		return err
	}
	if err := checkFileLimit(&check, limit); err != nil {
		_, given := os.LookupEnv("ALLOT_CONNECTIONS_MAX")
		given = given || ef.given("connections-max")
		fit := fittingConnectionsMax(&check, limit)
		if given || fit < 1 {
			return &exitError{code: 2, msg: err.Error()}
		}
		// The default does not fit this machine's limit: serve fewer
		// connections, as Redis lowers maxclients, and say so.
		fmt.Fprintf(stderr, "allot serve: the file limit (ulimit -n) is %d: serving at most %d connections per protocol instead of the default %d (raise the limit, or set --connections-max)\n", limit, fit, check.ConnectionsMax)
		cfg.ConnectionsMax = fit
	}
	if dir == "" {
		root, err := fsinfo.DataRoot()
		if err != nil {
			return &exitError{code: 2, msg: err.Error() + " (give --data)"}
		}
		dir = filepath.Join(root, "data")
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	logf := func(format string, a ...any) { fmt.Fprintf(stderr, "allot serve: "+format+"\n", a...) }
	warnMemoryFS(dir, mode, logf)

	if retention < time.Millisecond {
		return &exitError{code: 2, msg: fmt.Sprintf("--retention must be at least 1ms, got %v", retention)}
	}
	if snapshotOps < 1 {
		return &exitError{code: 2, msg: fmt.Sprintf("--snapshot-every-ops must be positive, got %d", snapshotOps)}
	}
	if keepSnapshots < 1 || keepSnapshots > journal.KeepSnapshotsMax {
		return &exitError{code: 2, msg: fmt.Sprintf("--keep-snapshots must be 1..%d, got %d", journal.KeepSnapshotsMax, keepSnapshots)}
	}
	if keysMax < 1 {
		return &exitError{code: 2, msg: fmt.Sprintf("--keys-max must be positive, got %d", keysMax)}
	}
	n, err := serveProcs(procs, os.Getenv("GOMAXPROCS"), runtime.GOMAXPROCS(0), runtime.NumCPU())
	if err != nil {
		return &exitError{code: 2, msg: err.Error()}
	}
	runtime.GOMAXPROCS(n)
	// Before the data directory is made: an address that cannot be had
	// would otherwise leave a fresh journal behind.
	for _, a := range []struct{ name, env, addr string }{{"resp", "ALLOT_RESP", cfg.RESPAddr}, {"http", "ALLOT_HTTP", cfg.HTTPAddr}} {
		if err := probeListen(a.addr); err != nil {
			var ae *net.AddrError
			code := 1
			if errors.As(err, &ae) {
				code = 2
			}
			return &exitError{code: code, msg: fmt.Sprintf("%s %s: %v", ef.origin(a.name, a.env), a.addr, err)}
		}
	}
	engineCfg := engine.Config{Dir: dir, Durability: mode, Retention: retention, SnapshotEveryOps: int64(snapshotOps), KeepSnapshots: keepSnapshots, KeysMax: keysMax, Logger: slog.New(slog.NewTextHandler(stderr, nil))}
	if pprofAddr != "" {
		// Before the node starts, single or in a cluster: a node of a
		// cluster is profiled the same way.
		stopPprof, err := servePprof(pprofAddr)
		if err != nil {
			return err
		}
		defer stopPprof()
		logf("pprof on %s", pprofAddr)
	}
	if clusterCfg.URLs != "" {
		if clusterCfg.Shard == "" {
			// Given empty (a script's unset variable): not shard main.
			return &exitError{code: 2, msg: "--shard (env ALLOT_SHARD) is empty; leave it out for the shard main"}
		}
		return serveCluster(clusterCfg, engineCfg, cfg, stderr, logf)
	}
	e, err := engine.Open(engineCfg)
	if err != nil {
		return err
	}
	srv, err := server.New(cfg, e)
	if err != nil {
		e.Close()
		return err
	}
	rec := e.Recovery()
	logf("data dir %s, durability %s (version %s; recovered to lsn %d, replayed %d ops)", dir, mode, cfg.Version, rec.LastLSN, rec.Replayed)
	if a := srv.RESPAddr(); a != "" {
		logf("RESP on %s", a)
		logf("RESP I/O %s", srv.RESPIO())
	}
	if a := srv.HTTPAddr(); a != "" {
		logf("HTTP on %s", a)
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	served := make(chan error, 1)
	go func() { served <- srv.Serve() }()
	logf("ready")

	var serveErr error
	select {
	case <-ctx.Done():
		logf("signal received: stopping")
	case serveErr = <-served:
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	shutErr := srv.Shutdown(sctx)
	closeErr := e.Close()
	if closeErr != nil {
		return fmt.Errorf("closing the engine: %w", closeErr)
	}
	logf("stopped; journal durable in %s", dir)
	if serveErr != nil {
		return serveErr
	}
	if shutErr != nil && !(shutdownTimeout == 0 && errors.Is(shutErr, context.DeadlineExceeded)) {
		// With 0 the connections were to be closed at once: the
		// deadline's end is what was asked for, not a failure.
		return shutErr
	}
	return nil
}

// serveCluster runs a node of a shard until SIGTERM or SIGINT.
// ALLOT_CLUSTER_FAULT breaks the replication on purpose (cluster.Config
// Fault): the failover tests use it to show that they catch the breakage.
func serveCluster(ccfg cluster.Config, ecfg engine.Config, scfg server.Config, stderr io.Writer, logf func(string, ...any)) error {
	ccfg.Engine, ccfg.Server = ecfg, scfg
	ccfg.Fault = os.Getenv("ALLOT_CLUSTER_FAULT")
	ccfg.Logger = slog.New(slog.NewTextHandler(stderr, nil))
	if ccfg.Fault != "" {
		logf("WARNING: ALLOT_CLUSTER_FAULT=%s: replication is broken on purpose (tests only)", ccfg.Fault)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	logf("cluster %s, shard %s, data dir %s, durability %s", ccfg.URLs, ccfg.Shard, ecfg.Dir, ecfg.Durability)
	if err := cluster.Run(ctx, ccfg); err != nil {
		var ce *cluster.ConfigError
		if errors.As(err, &ce) {
			return &exitError{code: 2, msg: err.Error()}
		}
		return err
	}
	logf("stopped")
	return nil
}

// warnMemoryFS says loudly when fsync mode runs on tmpfs or ramfs: every
// fdatasync there returns at once and survives no power loss, so the mode
// promises what the disk cannot keep.
func warnMemoryFS(dir string, mode engine.Durability, logf func(string, ...any)) {
	info, err := fsinfo.Describe(dir)
	if err != nil {
		logf("cannot tell the file system of %s: %v", dir, err)
		return
	}
	logf("data dir %s is on %s", dir, info)
	if info.Memory && mode == engine.DurabilityFsync {
		logf("WARNING: durability fsync on a memory file system (%s at %s): fsync there survives no power loss; put --data on a disk", info.Type, info.MountPoint)
	}
}

// probeListen says whether addr ("" for none) can be listened on now, by
// listening and closing at once.
func probeListen(addr string) error {
	if addr == "" {
		return nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	return ln.Close()
}

// checkPprofAddr says why addr cannot serve pprof: not host:port, or not
// loopback.
func checkPprofAddr(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("pprof address %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("pprof address %s is not loopback", addr)
	}
	return nil
}

func servePprof(addr string) (func(), error) {
	if err := checkPprofAddr(addr); err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("pprof listen: %w", err)
	}
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go hs.Serve(ln)
	return func() { hs.Close() }, nil
}

// version names the build: the module version, else the commit it was
// built from.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	rev, dirty := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "dev"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "-dirty"
	}
	return rev
}

// serveProcsMax bounds --procs.
const serveProcsMax = 1024

// serveProcs returns the GOMAXPROCS the server runs with: given when it is
// set; else the environment's GOMAXPROCS when that is set (Go applied it:
// current); else, when Go's own choice (current) is the CPUs the process
// may run on (cpus, runtime.NumCPU: the machine's, or its CPU affinity),
// one more; else (a cgroup's CPU quota lowered it) current.
//
// Why one more than the CPUs: in fsync mode the flusher waits in
// fdatasync and the RESP event loop in epoll_wait, each holding its thread
// in the kernel. Go's sysmon finds a processor in a system call for more
// than 20 µs and, when no other processor is idle, hands it to another
// thread (a futex wake, and on the call's return a thread parked again),
// and while it keeps finding such processors it polls every 20 µs. At 16
// clients in fsync mode on two CPUs, sysmon's sleeps alone were 23% of the
// server's CPU samples (perf; docs/results.md); with one idle processor
// sysmon leaves a short system call its processor, and backs off: 8%, and
// the server's CPU per op fell by about a tenth (six side-by-side pairs,
// every one lower; throughput the same within the machine's noise). Not
// above a cgroup's quota: more processors than the quota run more threads
// at once than it pays for, and the kernel throttles the whole process.
// Rejected: the flusher's fdatasync as a raw system call (its processor
// kept through the sync): the same saving in that profile, but a
// stop-the-world pause would wait for a whole fdatasync.
func serveProcs(given int, env string, current, cpus int) (int, error) {
	switch {
	case given < 0 || given > serveProcsMax:
		return 0, fmt.Errorf("--procs must be 0 (automatic) to %d, got %d", serveProcsMax, given)
	case given > 0:
		return given, nil
	case env != "" || current != cpus:
		return current, nil
	}
	return current + 1, nil
}
