package services

import (
	"context"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// auditPortOffset keeps these tests' private servers off the shared ones
// and off those of the package's other tests (testPortOffset).
const auditPortOffset = 2700

// auditConfig is privateConfig on ports of these tests' own.
func auditConfig(t *testing.T) Config {
	t.Helper()
	cfg := privateConfig(t)
	cfg.portOffset = auditPortOffset
	t.Cleanup(func() { Down(context.Background(), cfg) })
	return cfg
}

// A server left paused (SIGSTOP, as Pause or a crashed chaos run leaves
// it) must still stop cleanly on Down: a stopped process never acts on
// the stop signal, so Down used to wait out the whole timeout and then
// SIGKILL it (a crash, not a shutdown) and report a failure.
func TestAuditDownStopsAPausedServer(t *testing.T) {
	cfg := auditConfig(t)
	requireInstalled(t, cfg, Redis)
	ctx := context.Background()
	if err := Up(ctx, cfg, Redis); err != nil {
		t.Fatal(err)
	}
	pid, err := Pause(ctx, cfg, Redis)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGCONT) })
	cfg.Timeout = 5 * time.Second
	start := time.Now()
	if err := Down(ctx, cfg, Redis); err != nil {
		t.Fatalf("Down of a paused server: %v", err)
	}
	if alive(pid) {
		t.Fatalf("pid %d survived Down", pid)
	}
	// Below the 5 s timeout it used to wait out, with room for a loaded
	// machine's slow shutdown.
	if took := time.Since(start); took > 4500*time.Millisecond {
		t.Fatalf("Down of a paused server took %v", took)
	}
}

// postgresOwnedSleeper starts a process of the postgres system user that
// is not our server: what a pid left in a lock file by a kill -9 may name
// later (a backend of the machine's own PostgreSQL, say).
func postgresOwnedSleeper(t *testing.T) int {
	t.Helper()
	u, err := lookupAccount("postgres")
	if err != nil || u == nil {
		t.Skipf("needs root and the postgres user: %v", err)
	}
	cmd := command(context.Background(), u, "/", "sleep", "300")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd.Process.Pid
}

// replacePID rewrites the pid on the first line of a lock file.
func replacePID(t *testing.T, path string, pid int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(b), "\n")
	if err := os.WriteFile(path, []byte(strconv.Itoa(pid)+"\n"+rest), 0o600); err != nil {
		t.Fatal(err)
	}
}

// After a kill -9 PostgreSQL leaves postmaster.pid and the socket's lock
// file behind. When their pid is reused by a process the postgres user may
// signal, PostgreSQL takes it for a live postmaster and refuses to start:
// Up must see that the pid is not our server (it holds the lock and the
// port is free), clear the stale files, start, and leave that process be.
func TestAuditPostgresUpAfterCrashWithReusedPID(t *testing.T) {
	cfg := auditConfig(t)
	requireInstalled(t, cfg, Postgres)
	ctx := context.Background()
	if err := Up(ctx, cfg, Postgres); err != nil {
		t.Fatal(err)
	}
	if _, err := Kill(ctx, cfg, Postgres); err != nil {
		t.Fatal(err)
	}
	in, err := newInstance(&cfg, postgresServer{})
	if err != nil {
		t.Fatal(err)
	}
	other := postgresOwnedSleeper(t)
	replacePID(t, postgresServer{}.pidFile(in), other)
	replacePID(t, filepath.Join(in.dir, ".s.PGSQL."+strconv.Itoa(in.port)+".lock"), other)

	if err := Up(ctx, cfg, Postgres); err != nil {
		t.Fatalf("Up after a crash whose pid was reused: %v", err)
	}
	if st := statusOf(t, cfg, Postgres); st.State != StateRunning || st.PID == other {
		t.Fatalf("status: %v", st)
	}
	if !alive(other) {
		t.Fatalf("process %d, not ours, was stopped", other)
	}
}

// waitForFile waits until a file named name appears anywhere under dir,
// or done is closed.
func waitForFile(t *testing.T, dir, name string, done <-chan struct{}) bool {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		select {
		case <-done:
			return false
		default:
		}
		found := false
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.Name() == name {
				found = true
				return filepath.SkipAll
			}
			return nil
		})
		if found {
			return true
		}
	}
	t.Fatalf("no %s appeared under %s", name, dir)
	return false
}

// An `up` interrupted while the data directory is being created (Ctrl-C
// on the first start kills initdb or mariadb-install-db) must not leave a
// half-made directory that the next Up takes for a complete one and then
// fails on for ever.
func TestAuditUpAfterInterruptedInit(t *testing.T) {
	for _, tc := range []struct {
		name, marker string
		delay        time.Duration
	}{
		{Postgres, "PG_VERSION", 0},
		{MariaDB, "mysql", 0},
		{MariaDB, "mysql", 300 * time.Millisecond},
	} {
		t.Run(tc.name+"-"+tc.delay.String(), func(t *testing.T) {
			cfg := auditConfig(t)
			requireInstalled(t, cfg, tc.name)
			in, err := newInstance(&cfg, mustServer(t, tc.name))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			var upErr error
			go func() { upErr = Up(ctx, cfg, tc.name); close(done) }()
			if !waitForFile(t, in.dir, tc.marker, done) {
				cancel()
				t.Skipf("the data directory was complete before it could be interrupted (%v)", upErr)
			}
			time.Sleep(tc.delay)
			cancel()
			<-done
			if upErr == nil {
				t.Skip("Up finished before the interruption reached it")
			}
			t.Logf("interrupted: %.200s", upErr)
			if err := Up(context.Background(), cfg, tc.name); err != nil {
				t.Fatalf("Up after an interrupted first start: %v", err)
			}
			if st := statusOf(t, cfg, tc.name); st.State != StateRunning {
				t.Fatalf("status: %v", st)
			}
		})
	}
}

// A power cut or a kill -9 while a server starts can leave its pid file
// empty. That is no server of ours: Up must start it, Down must have
// nothing to stop, and neither may fail until someone deletes the file.
func TestAuditEmptyPIDFileIsStale(t *testing.T) {
	cfg := auditConfig(t)
	requireInstalled(t, cfg, Redis)
	ctx := context.Background()
	in, err := newInstance(&cfg, redisServer{})
	if err != nil {
		t.Fatal(err)
	}
	if err := in.makeDir(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(in.srv.pidFile(in), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Down(ctx, cfg, Redis); err != nil {
		t.Fatalf("Down with an empty pid file: %v", err)
	}
	if st := statusOf(t, cfg, Redis); st.State != StateStopped || !strings.Contains(st.Detail, "stale pid file") {
		t.Fatalf("status with an empty pid file: %v", st)
	}
	if err := Up(ctx, cfg, Redis); err != nil {
		t.Fatalf("Up with an empty pid file: %v", err)
	}
	if st := statusOf(t, cfg, Redis); st.State != StateRunning {
		t.Fatalf("status after Up: %v", st)
	}
}

// A Config.Dir may hold characters the servers' configuration files give
// a meaning to: '#' starts a comment in my.cnf, a quote ends a string in
// postgresql.conf. The paths written there must still be the whole path.
func TestAuditDirWithSpecialCharacters(t *testing.T) {
	for _, tc := range []struct{ name, sub string }{
		{MariaDB, "a#b"},
		{Postgres, "a'b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := auditConfig(t)
			requireInstalled(t, cfg, tc.name)
			cfg.Dir = filepath.Join(cfg.Dir, tc.sub)
			t.Cleanup(func() { Down(context.Background(), cfg) })
			if err := Up(context.Background(), cfg, tc.name); err != nil {
				t.Fatalf("Up in %s: %v", cfg.Dir, err)
			}
			if st := statusOf(t, cfg, tc.name); st.State != StateRunning || !strings.HasPrefix(st.Dir, cfg.Dir) {
				t.Fatalf("status: %v in %s", st, st.Dir)
			}
		})
	}
}

// listenAddrs lists the local addresses (hex, as /proc/net/tcp{,6} shows
// them) of the TCP sockets pid listens on.
func listenAddrs(t *testing.T, pid int) []string {
	t.Helper()
	fds, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
	if err != nil {
		t.Fatal(err)
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		target, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/fd/" + fd.Name())
		if inode, ok := strings.CutPrefix(target, "socket:["); err == nil && ok {
			inodes[strings.TrimSuffix(inode, "]")] = true
		}
	}
	var addrs []string
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(table)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) > 9 && f[3] == "0A" && inodes[f[9]] {
				addrs = append(addrs, f[1])
			}
		}
	}
	return addrs
}

// dtm binds its HTTP and gRPC ports on every interface unless told
// otherwise, and has no setting for it: the server Up starts must listen
// on loopback only, like every other.
func TestAuditDTMListensOnLoopbackOnly(t *testing.T) {
	cfg := auditConfig(t)
	requireInstalled(t, cfg, Redis)
	cfg.Timeout = 10 * time.Minute // a first build of dtm takes minutes
	if err := Up(context.Background(), cfg, DTM); err != nil {
		t.Fatal(err)
	}
	st := statusOf(t, cfg, DTM)
	if st.State != StateRunning {
		t.Fatalf("status: %v", st)
	}
	addrs := listenAddrs(t, st.PID)
	if len(addrs) == 0 {
		t.Fatalf("dtm (pid %d) listens on nothing", st.PID)
	}
	for _, a := range addrs {
		host, _, _ := strings.Cut(a, ":")
		if host != "0100007F" && host != "00000000000000000000000001000000" {
			t.Errorf("dtm (pid %d) listens on %s (hex, from /proc/net/tcp*), not loopback", st.PID, a)
		}
	}
}

// A port a server needs besides its main one, held by a process we did
// not start, must be refused up front with an error naming it (as the
// main port is), and that process left alone.
func TestAuditRabbitMQDistPortTaken(t *testing.T) {
	cfg := auditConfig(t)
	requireInstalled(t, cfg, RabbitMQ)
	cfg.Timeout = time.Minute
	port := rabbitmqServer{}.basePort() + cfg.portOffset + 1
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		t.Skipf("the test port is busy: %v", err)
	}
	defer l.Close()
	start := time.Now()
	err = Up(context.Background(), cfg, RabbitMQ)
	t.Logf("Up took %v", time.Since(start))
	if err == nil || !strings.Contains(err.Error(), "port "+strconv.Itoa(port)) {
		t.Fatalf("Up with the distribution port %d taken: %v", port, err)
	}
	if c, err := net.Dial("tcp", l.Addr().String()); err != nil {
		t.Fatalf("the foreign listener on port %d no longer answers: %v", port, err)
	} else {
		c.Close()
	}
}
