package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"allot/bench/kill"
	"allot/internal/fsinfo"
	"allot/internal/procfs"
	"allot/services"
	"allot/store"
	"allot/store/remote"
)

// killDurabilities are the modes --kill audits when --durability is not
// given: every one, since what the weaker modes lose is the point.
var killDurabilities = []store.Durability{store.DurabilityFsync, store.DurabilityWrite, store.DurabilityNone}

// runKill is `allot bench --kill N`: for each store and durability, N
// rounds of load, SIGKILL of the server process, restart on the same data
// and a count of what the crash did (bench/kill). It prints the
// lost-acknowledged table and fails when a mode broke what it must never
// break.
func (j *benchJob) runKill(ctx context.Context) error {
	durabilities := j.durabilities
	if !j.f.set["durability"] {
		durabilities = killDurabilities
	}
	var results []*kill.Result
	var started []string // private peer servers, stopped at the end
	defer func() { j.stopKillServers(started) }()
	for _, name := range j.stores {
		for _, d := range durabilities {
			res := j.killOne(ctx, name, d, &started)
			results = append(results, res)
			if j.f.jsonOut {
				if err := json.NewEncoder(j.stdout).Encode(res); err != nil {
					return err
				}
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
		}
	}
	out := j.stdout
	if j.f.jsonOut {
		out = j.stderr
	}
	fmt.Fprintf(out, "kill audit: %d SIGKILLs of the server per store and mode, under load from %d workers\n", j.f.kill, j.f.workers)
	if err := kill.WriteTable(out, results); err != nil {
		return err
	}
	failed := 0
	for _, r := range results {
		if r.Failed() {
			failed++
		}
	}
	if failed > 0 {
		return &exitError{code: 1, msg: fmt.Sprintf("kill audit: %d of %d audits failed (see above)", failed, len(results))}
	}
	return nil
}

// killOne audits one store in one mode.
func (j *benchJob) killOne(ctx context.Context, name string, d store.Durability, started *[]string) (res *kill.Result) {
	failed := func(err error) *kill.Result {
		return &kill.Result{Store: name, Durability: string(d), Error: err.Error()}
	}
	reg, err := store.Lookup(name)
	if err != nil {
		return failed(err)
	}
	cfg := kill.Config{
		Store: name, Durability: d, Kills: j.f.kill, Workers: j.f.workers,
		Seed: j.f.workload.seed, Log: j.stderr,
	}
	if j.f.set["ops"] {
		// The ops of one round: what a round killed after its last op
		// (the table's advice) must raise.
		cfg.OpsMax = j.f.workload.ops
	}
	if j.f.quiet {
		cfg.Log = nil
	}
	switch {
	case name == remote.ClusterStore:
		if j.f.addr != "" {
			return failed(errors.New("--kill kills the nodes of a cluster it starts; it cannot with --addr"))
		}
		faults, err := parseFaults(j.f.faults)
		if err != nil {
			return failed(err)
		}
		c, err := startCluster(ctx, d, faults, j.f.workload.seed, cfg.Log)
		if !slices.Contains(*started, services.NATS) {
			*started = append(*started, services.NATS)
		}
		if err != nil {
			return failed(err)
		}
		defer func() {
			// What the audit could not remove is the result's, so that the
			// table (printed with --quiet too) and --json say it.
			if err := c.cleanup(); err != nil {
				fmt.Fprintf(c.log, "allot-cluster: %v\n", err)
				res.Cleanup = err.Error()
			}
		}()
		cfg.Server = c
		cfg.Open = func(ctx context.Context) (store.Store, error) {
			return c.open(ctx, j.f.workers, j.f.openTimeout)
		}
	case name == "allot" || name == "allot-mux":
		if j.f.addr != "" {
			return failed(errors.New("--kill kills the allot serve it starts; it cannot with --addr"))
		}
		srv, err := startAllotForKill(ctx, d, j.f.workers)
		if err != nil {
			return failed(err)
		}
		defer srv.close()
		cfg.Server = srv
		cfg.Open = func(ctx context.Context) (store.Store, error) {
			return remote.Open(ctx, store.Config{Addr: srv.addr, Durability: d, Workers: j.f.workers, Timeout: j.f.openTimeout},
				remote.Options{Shared: name == "allot-mux"})
		}
	case reg.Server != "":
		if j.f.addr != "" {
			return failed(errors.New("--kill kills the server services started; it cannot with --addr"))
		}
		up, err := killServices(d)
		if err != nil {
			return failed(err)
		}
		if !j.f.quiet {
			up.Log = j.stderr
		}
		addr, err := services.Addr(up, reg.Server)
		if err != nil {
			return failed(err)
		}
		if err := services.Up(ctx, up, reg.Server); err != nil {
			return failed(err)
		}
		if !slices.Contains(*started, reg.Server) {
			*started = append(*started, reg.Server)
		}
		cfg.Server = peerServer{name: reg.Server, up: up}
		cfg.Open = func(ctx context.Context) (store.Store, error) {
			return store.Open(ctx, name, store.Config{Addr: addr, Durability: d, Workers: j.f.workers, Timeout: j.f.openTimeout})
		}
	default:
		return failed(fmt.Errorf("%s runs in the bench's own process: there is no server process to kill", name))
	}
	return kill.Run(ctx, cfg)
}

// killPortOffset moves the ports of the audit's private peer servers
// (PostgreSQL on 17432, MariaDB 15306, Redis 18379, Tarantool 15301) away
// from the shared ones and from the services tests' own.
const killPortOffset = 2000

// killServices is where the audit's private peer servers live: beside the
// shared ones in .allot, on their own ports, so that crashing them never
// breaks a run or a test that uses the shared servers.
func killServices(d store.Durability) (services.Config, error) {
	root, err := fsinfo.DataRoot()
	if err != nil {
		return services.Config{}, err
	}
	return services.WithPortOffset(services.Config{Dir: filepath.Join(root, "kill-services"), Durability: d}, killPortOffset), nil
}

// stopKillServers stops the private servers the audit started.
func (j *benchJob) stopKillServers(names []string) {
	if len(names) == 0 {
		return
	}
	cfg, err := killServices("")
	if err == nil {
		err = services.Down(context.Background(), cfg, names...)
	}
	if err != nil {
		fmt.Fprintf(j.stderr, "allot bench: stopping the audit's servers: %v\n", err)
	}
}

// peerServer is a server services started: killed with services.Kill,
// started again with services.Up in the audit's durability.
type peerServer struct {
	name string
	up   services.Config
}

// Kill crashes the audit's private server (p.up names its folder and
// ports), never the shared one.
func (p peerServer) Kill(ctx context.Context) error {
	_, err := services.Kill(ctx, p.up, p.name)
	return err
}

func (p peerServer) Start(ctx context.Context) error { return services.Up(ctx, p.up, p.name) }

// allotServer is an allot serve the audit started on a data directory of
// its own under the project's .allot, restarted on the same address.
type allotServer struct {
	proc    *remote.Process
	dataDir string
	addr    string
	cfg     store.Config
}

func startAllotForKill(ctx context.Context, d store.Durability, workers int) (*allotServer, error) {
	dir, err := fsinfo.TempDataDir("kill-")
	if err != nil {
		return nil, err
	}
	s := &allotServer{dataDir: dir, cfg: store.Config{DataDir: dir, Durability: d, Workers: workers}}
	if s.proc, err = remote.StartProcess(ctx, "", s.cfg); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s.addr = s.proc.Addr()
	return s, nil
}

// Kill crashes the server. One that had already exited by itself (a
// panic, the OOM killer) is an error: that is a finding of its own, not
// the crash the audit meant to cause.
func (s *allotServer) Kill(context.Context) error {
	if s.proc == nil {
		return errors.New("allot serve is not running")
	}
	pid, running := s.proc.PID(), processRunning(s.proc.PID())
	s.proc.Kill()
	log := s.proc.Log()
	s.proc = nil
	if !running {
		return fmt.Errorf("allot serve (pid %d) had exited by itself before the kill:\n%s", pid, log)
	}
	return nil
}

func (s *allotServer) Start(ctx context.Context) error {
	p, err := remote.StartProcess(ctx, "", s.cfg, "--resp", s.addr)
	if err != nil {
		return err
	}
	s.proc = p
	return nil
}

func (s *allotServer) close() {
	if s.proc != nil {
		s.proc.Stop(time.Minute)
	}
	os.RemoveAll(s.dataDir)
}

// processRunning reports whether pid is a process that has not exited (a
// zombie has).
func processRunning(pid int) bool {
	st, err := procfs.FS("/proc").Stat(pid)
	return err == nil && st.State != 'Z' && st.State != 'X'
}
