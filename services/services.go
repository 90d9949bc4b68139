package services

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"allot/internal/procfs"
	"allot/store"
)

// probeTimeout bounds one readiness or status probe.
const probeTimeout = 3 * time.Second

// server is what differs between the four servers. The generic code in this
// file does locking, pid checks, waiting and stopping around it.
type server interface {
	name() string
	basePort() int
	// packages are the Debian packages that provide the server.
	packages() []string
	installed() bool
	// runAs is the system user the server runs as when we are root; ""
	// means the current user.
	runAs() string
	// exeNames are the base names /proc/<pid>/exe may show for the server.
	exeNames() []string
	pidFile(in *instance) string
	logFile(in *instance) string
	stopSignal() syscall.Signal
	// start initialises the data directory if needed, writes the
	// configuration for in.durability and launches the server. It returns
	// the pid to watch while waiting, 0 if it does not know it yet.
	start(ctx context.Context, in *instance) (int, error)
	// probe connects as a client would and reads the version and the
	// durability the server runs in.
	probe(ctx context.Context, in *instance) (probeResult, error)
	// setDurability switches a running server to d at runtime, or reports
	// that it needs a restart for that.
	setDurability(ctx context.Context, in *instance, d store.Durability) (restart bool, err error)
}

// fixedDurability is a server that takes no durability setting: it runs
// in one mode whatever Config.Durability asks (the NATS cluster always
// syncs; RabbitMQ leaves durability to each queue and message). Up says
// so instead of claiming a change, and starts it in that mode.
type fixedDurability interface {
	// fixedDurability returns the mode the server reports, and a
	// sentence saying what its durability is instead of a setting.
	fixedDurability() (store.Durability, string)
}

// setupper is a server that needs accounts created after its first start
// (PostgreSQL; the others create theirs from their start-up script).
type setupper interface {
	setup(ctx context.Context, in *instance) error
}

type probeResult struct {
	version    string
	durability store.Durability
}

// instance is one server in one directory.
type instance struct {
	srv        server
	cfg        *Config
	dir        string // Config.Dir/<name>
	port       int
	user       *account
	durability store.Durability // the mode to start in
}

func (in *instance) addr() string { return "127.0.0.1:" + strconv.Itoa(in.port) }

func serverByName(name string) (server, error) {
	switch name {
	case Postgres:
		return postgresServer{}, nil
	case MariaDB:
		return mariadbServer{}, nil
	case Redis:
		return redisServer{}, nil
	case Tarantool:
		return tarantoolServer{}, nil
	case RabbitMQ:
		return rabbitmqServer{}, nil
	case DTM:
		return dtmServer{}, nil
	}
	if s, ok := natsNode(name); ok {
		return s, nil
	}
	known := append(append(Names(), NATS), NATSNodes...)
	return nil, fmt.Errorf("services: unknown server %q (known: %s)", name, strings.Join(known, ", "))
}

// CheckNames returns an error naming the first of names that is no server
// of this package (Up, Down and Status take them).
func CheckNames(names ...string) error {
	_, err := serversByName(names)
	return err
}

func serversByName(names []string) ([]server, error) {
	if len(names) == 0 {
		names = Names()
	}
	var list []server
	for _, n := range names {
		if n == NATS { // the cluster: its nodes, in order
			for _, node := range NATSNodes {
				s, _ := natsNode(node)
				list = append(list, s)
			}
			continue
		}
		s, err := serverByName(n)
		if err != nil {
			return nil, err
		}
		list = append(list, s)
	}
	return list, nil
}

// newInstance resolves where and as whom s runs. It creates no directory.
func newInstance(cfg *Config, s server) (*instance, error) {
	in := &instance{srv: s, cfg: cfg, dir: filepath.Join(cfg.Dir, s.name()), port: s.basePort() + cfg.portOffset, durability: cfg.startDurability()}
	if f, ok := s.(fixedDurability); ok {
		in.durability, _ = f.fixedDurability()
	}
	u, err := lookupAccount(s.runAs())
	if err != nil {
		return nil, err
	}
	in.user = u
	if u != nil && !u.canReach(cfg.Dir) {
		in.dir = filepath.Join(fallbackRoot(cfg.Dir), s.name())
	}
	return in, nil
}

// makeDir creates the instance's directory, owned by the user the server
// runs as, and checks that a unix socket path in it fits the kernel limit.
func (in *instance) makeDir() error {
	if err := mkdirShared(in.dir); err != nil {
		return fmt.Errorf("services: creating %s: %w", in.dir, err)
	}
	if in.user != nil {
		if err := os.Chown(in.dir, int(in.user.uid), int(in.user.gid)); err != nil {
			return fmt.Errorf("services: giving %s to user %s: %w", in.dir, in.user.name, err)
		}
	}
	// sun_path holds 108 bytes; leave room for the socket's own name.
	if len(in.dir) > 80 {
		return fmt.Errorf("services: directory %s is too long to hold a unix socket (80 bytes at most); choose a shorter --dir", in.dir)
	}
	return nil
}

// pid returns the server's pid when its pid file names our running server,
// else 0 and, when a pid file exists, why it was not taken as ours.
func (in *instance) pid() (int, string, error) {
	pid, err := readPID(in.srv.pidFile(in))
	if errors.Is(err, errBadPIDFile) {
		// What a crash or a power cut during a start leaves (an empty
		// file): no server of ours to find there.
		return 0, err.Error(), nil
	}
	if err != nil || pid == 0 {
		return 0, "", err
	}
	ours, why := identify(pid, in.srv.exeNames(), in.dir)
	if !ours {
		return 0, why, nil
	}
	return pid, "", nil
}

// Up starts the named servers (all when none is named) and returns when
// each answers a client connection. It is idempotent. Missing Debian
// packages are installed first when running as root; a server whose
// packages cannot be installed is not started, the others are, and the
// error names it.
func Up(ctx context.Context, cfg Config, names ...string) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	list, err := serversByName(names)
	if err != nil {
		return err
	}
	if err := mkdirShared(cfg.Dir); err != nil {
		return fmt.Errorf("services: creating %s: %w", cfg.Dir, err)
	}
	// A server whose packages could not be installed is not started; the
	// others are.
	notInstalled := installMissing(ctx, &cfg, list)
	var errs []error
	for _, s := range list {
		if err := notInstalled[s.name()]; err != nil {
			errs = append(errs, err)
			continue
		}
		if err := locked(ctx, &cfg, s, func(in *instance) error { return upOne(ctx, in) }); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// locked runs f on s's instance while holding s's lock.
func locked(ctx context.Context, cfg *Config, s server, f func(*instance) error) error {
	lock, err := lockFile(ctx, filepath.Join(cfg.Dir, s.name()+".lock"))
	if err != nil {
		return err
	}
	defer lock.unlock()
	in, err := newInstance(cfg, s)
	if err != nil {
		return err
	}
	return f(in)
}

func upOne(ctx context.Context, in *instance) error {
	cfg, s := in.cfg, in.srv
	if err := in.makeDir(); err != nil {
		return err
	}
	// want is the mode to switch a running server to ("": keep its own).
	want := cfg.Durability
	if f, ok := s.(fixedDurability); ok {
		if d, what := f.fixedDurability(); want != "" && want != d {
			fmt.Fprintf(cfg.Log, "%s: %s; ignores --durability %s\n", s.name(), what, want)
		}
		want = "" // what runs, or starts (in.durability), runs in d
	}
	pid, _, err := in.pid()
	if err != nil {
		return err
	}
	if pid != 0 {
		if stoppedBySignal(pid) {
			// Paused (SIGSTOP: Pause, or a fault run cut short): it holds
			// its port and answers nothing, and the wait below would run
			// out its whole timeout. up means running: continue it.
			fmt.Fprintf(cfg.Log, "%s: pid %d was stopped by a signal (paused); continuing it\n", s.name(), pid)
			if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
				return fmt.Errorf("services: %s: continue the stopped pid %d: %w", s.name(), pid, err)
			}
		}
		p, err := in.waitReady(ctx, pid)
		if err != nil {
			return err
		}
		if want == "" || p.durability == want {
			return nil
		}
		restart, err := s.setDurability(ctx, in, want)
		if err != nil {
			return fmt.Errorf("services: %s: switching to durability %s: %w", s.name(), want, err)
		}
		if !restart {
			fmt.Fprintf(cfg.Log, "%s: durability set to %s\n", s.name(), want)
			return nil
		}
		fmt.Fprintf(cfg.Log, "%s: restarting (pid %d) to change durability from %s to %s\n", s.name(), pid, p.durability, want)
		if err := stopProcess(ctx, pid, s.stopSignal(), cfg.Timeout); err != nil {
			return fmt.Errorf("services: %s: %w", s.name(), err)
		}
	}
	return in.start(ctx)
}

// start launches a server that is not running and waits for it.
func (in *instance) start(ctx context.Context) error {
	name := in.srv.name()
	if err := portFree(in.port); err != nil {
		return fmt.Errorf("services: %s: cannot start on port %d: %w (a process this tool did not start holds it; it is left alone)", name, in.port, err)
	}
	in.removeStaleLocks()
	fmt.Fprintf(in.cfg.Log, "%s: starting on %s, durability %s, in %s\n", name, in.addr(), in.durability, in.dir)
	watch, err := in.srv.start(ctx, in)
	if err != nil {
		return fmt.Errorf("services: %s: %w\nlog %s:\n%s", name, err, in.srv.logFile(in), logTail(in.srv.logFile(in)))
	}
	if _, err := in.waitReady(ctx, watch); err != nil {
		return err
	}
	if su, ok := in.srv.(setupper); ok {
		if err := su.setup(ctx, in); err != nil {
			return fmt.Errorf("services: %s: creating accounts: %w", name, err)
		}
	}
	return nil
}

// lockFiler is a server that keeps lock files beside its pid file, each
// starting with the pid of the server holding it.
type lockFiler interface {
	lockFiles(in *instance) []string
}

// removeStaleLocks removes the pid file and lock files that do not name our
// server. A crash leaves them behind naming a dead process, whose pid may
// since belong to another one: the wait for the new server would take a
// dead pid for the new server dying at once (Redis and Tarantool write
// theirs only after they fork), and PostgreSQL refuses to start while its
// files name a live process its user may signal. The caller holds the
// server's lock and found its port free, so no server of ours uses them.
func (in *instance) removeStaleLocks() {
	files := []string{in.srv.pidFile(in)}
	if lf, ok := in.srv.(lockFiler); ok {
		files = append(files, lf.lockFiles(in)...)
	}
	for _, f := range files {
		pid, err := readPID(f)
		stale := errors.Is(err, errBadPIDFile)
		if err == nil && pid != 0 {
			ours, why := identify(pid, in.srv.exeNames(), in.dir)
			stale = !ours
			if stale && alive(pid) {
				fmt.Fprintf(in.cfg.Log, "%s: removing stale %s (%s)\n", in.srv.name(), f, why)
			}
		}
		if stale {
			if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
				fmt.Fprintf(in.cfg.Log, "%s: cannot remove stale %s: %v\n", in.srv.name(), f, err)
			}
		}
	}
}

// waitReady probes until the server answers, the process it watches dies,
// or Config.Timeout passes. watch is a pid to check, 0 to rely on the pid
// file alone.
func (in *instance) waitReady(ctx context.Context, watch int) (probeResult, error) {
	name := in.srv.name()
	deadline := time.Now().Add(in.cfg.Timeout)
	var lastErr error
	for {
		pctx, cancel := context.WithTimeout(ctx, probeTimeout)
		p, err := in.srv.probe(pctx, in)
		cancel()
		if err == nil {
			return p, nil
		}
		lastErr = err
		pid := watch
		if pid == 0 {
			pid, _ = readPID(in.srv.pidFile(in))
		}
		fail := ""
		switch {
		case pid != 0 && !alive(pid):
			fail = fmt.Sprintf("the server (pid %d) exited", pid)
		case ctx.Err() != nil:
			fail = ctx.Err().Error()
		case time.Now().After(deadline):
			fail = fmt.Sprintf("no answer within %v", in.cfg.Timeout)
		}
		if fail != "" {
			return probeResult{}, fmt.Errorf("services: %s on %s: %s; last error: %v\nlog %s:\n%s",
				name, in.addr(), fail, lastErr, in.srv.logFile(in), logTail(in.srv.logFile(in)))
		}
		time.Sleep(processPollInterval)
	}
}

// portFree reports an error when something already listens on the port.
func portFree(port int) error {
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return err
	}
	return l.Close()
}

// Down stops the named servers (all when none is named) that Up started
// from cfg.Dir. A pid file naming a process that is not our server is left
// alone (and reported in Config.Log).
func Down(ctx context.Context, cfg Config, names ...string) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	list, err := serversByName(names)
	if err != nil {
		return err
	}
	if _, err := os.Stat(cfg.Dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	var errs []error
	for _, s := range list {
		if err := locked(ctx, &cfg, s, func(in *instance) error { return downOne(ctx, in) }); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func downOne(ctx context.Context, in *instance) error {
	cfg, s := in.cfg, in.srv
	pid, why, err := in.pid()
	if err != nil {
		return err
	}
	if pid == 0 {
		if why != "" {
			fmt.Fprintf(cfg.Log, "%s: not stopping anything: %s\n", s.name(), why)
		}
		return nil
	}
	fmt.Fprintf(cfg.Log, "%s: stopping pid %d\n", s.name(), pid)
	if err := stopProcess(ctx, pid, s.stopSignal(), cfg.Timeout); err != nil {
		return fmt.Errorf("services: %s: %w", s.name(), err)
	}
	return nil
}

// State is what Status found.
type State string

const (
	StateRunning      State = "running"
	StateStopped      State = "stopped"
	StateNotInstalled State = "not-installed"
)

// ServerStatus is one server's state.
type ServerStatus struct {
	Name  string
	State State
	Addr  string
	// PID, Version and Durability are known when State is running and the
	// server answered.
	PID        int
	Version    string
	Durability store.Durability
	Dir        string
	// Detail says what else is worth knowing: a server that runs but does
	// not answer, a stale pid file, a port held by another process.
	Detail string
}

func (s ServerStatus) String() string {
	line := fmt.Sprintf("%-10s %-13s %s", s.Name, s.State, s.Addr)
	if s.State == StateRunning {
		line += fmt.Sprintf("  pid %d", s.PID)
		if s.Version != "" {
			line += fmt.Sprintf("  %s  durability %s", s.Version, s.Durability)
		}
	}
	if s.Detail != "" {
		line += "  (" + s.Detail + ")"
	}
	return line
}

// Status reports the named servers (all when none is named). It takes no
// lock and changes nothing.
func Status(ctx context.Context, cfg Config, names ...string) ([]ServerStatus, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	list, err := serversByName(names)
	if err != nil {
		return nil, err
	}
	var out []ServerStatus
	for _, s := range list {
		in, err := newInstance(&cfg, s)
		if err != nil && s.installed() {
			return nil, err
		}
		if in == nil { // not installed, so its system user may not exist
			in = &instance{srv: s, cfg: &cfg, dir: filepath.Join(cfg.Dir, s.name()), port: s.basePort() + cfg.portOffset}
		}
		st := ServerStatus{Name: s.name(), Addr: in.addr(), Dir: in.dir, State: StateStopped}
		pid, why, err := in.pid()
		switch {
		case err != nil:
			st.Detail = err.Error()
		case pid != 0:
			st.State, st.PID = StateRunning, pid
			pctx, cancel := context.WithTimeout(ctx, probeTimeout)
			p, err := s.probe(pctx, in)
			cancel()
			if stoppedBySignal(pid) {
				st.Detail = "stopped by a signal (paused): 'up' continues it"
			} else if err != nil {
				st.Detail = "not answering: " + err.Error()
			}
			st.Version, st.Durability = p.version, p.durability
		case why != "":
			st.Detail = "stale pid file: " + why
		}
		if st.State != StateRunning {
			if !s.installed() {
				st.State = StateNotInstalled
				st.Detail = "apt-get install " + strings.Join(s.packages(), " ")
			} else if err := portFree(in.port); err != nil {
				st.Detail = fmt.Sprintf("port %d is held by a process this tool did not start", in.port)
			}
		}
		out = append(out, st)
	}
	return out, nil
}

// stoppedBySignal reports whether process pid is stopped by a signal
// (state T in /proc/<pid>/stat).
func stoppedBySignal(pid int) bool {
	st, err := procfs.FS("/proc").Stat(pid)
	return err == nil && st.State == 'T'
}
