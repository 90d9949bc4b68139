package services

import (
	"context"
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

	"github.com/redis/go-redis/v9"
	"github.com/tarantool/go-tarantool/v2"

	"allot/store"
)

// testPortOffset moves the private test servers off the shared ones'
// ports, so these tests can start and stop servers while other test
// packages use the shared servers.
const testPortOffset = 1000

// privateConfig returns a Config for servers of this test alone, in a
// directory the servers' system users can reach, stopped at the end.
func privateConfig(t *testing.T) Config {
	t.Helper()
	dir := t.TempDir()
	// t.TempDir makes 0700 folders; postgres and mysql must get through.
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cfg := Config{Dir: dir, Timeout: 2 * time.Minute, portOffset: testPortOffset}
	t.Cleanup(func() {
		if err := Down(context.Background(), cfg); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	return cfg
}

// requireInstalled skips (fails in CI) when a server's package is missing
// and cannot be installed.
func requireInstalled(t *testing.T, cfg Config, name string) {
	t.Helper()
	s, err := serverByName(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := ensureInstalled(context.Background(), &cfg, []server{s}); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
}

func statusOf(t *testing.T, cfg Config, name string) ServerStatus {
	t.Helper()
	list, err := Status(context.Background(), cfg, name)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 {
		t.Fatalf("Status(%s) returned %d entries", name, len(list))
	}
	return list[0]
}

// TestUpIsIdempotentAndDownStops starts each server privately, checks that
// a second Up keeps the same process, that Status reports it, and that Down
// stops it.
func TestUpIsIdempotentAndDownStops(t *testing.T) {
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			cfg := privateConfig(t)
			requireInstalled(t, cfg, name)
			ctx := context.Background()
			if err := Up(ctx, cfg, name); err != nil {
				t.Fatal(err)
			}
			first := statusOf(t, cfg, name)
			if first.State != StateRunning || first.Version == "" || first.Detail != "" {
				t.Fatalf("after Up: %v", first)
			}
			if first.Durability != store.DurabilityFsync {
				t.Errorf("a new server should start in fsync mode, got %v", first)
			}
			wantAddr := "127.0.0.1:" + strconv.Itoa(mustServer(t, name).basePort()+testPortOffset)
			if first.Addr != wantAddr {
				t.Errorf("addr %s, want %s", first.Addr, wantAddr)
			}
			if err := Up(ctx, cfg, name); err != nil {
				t.Fatal(err)
			}
			if second := statusOf(t, cfg, name); second.PID != first.PID || second.State != StateRunning {
				t.Fatalf("second Up changed the server: %v, then %v", first, second)
			}
			if err := Down(ctx, cfg, name); err != nil {
				t.Fatal(err)
			}
			if alive(first.PID) {
				t.Fatalf("pid %d still alive after Down", first.PID)
			}
			if st := statusOf(t, cfg, name); st.State != StateStopped {
				t.Fatalf("after Down: %v", st)
			}
			if err := Down(ctx, cfg, name); err != nil {
				t.Fatalf("a second Down: %v", err)
			}
		})
	}
}

func mustServer(t *testing.T, name string) server {
	s, err := serverByName(name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestDurability: Redis switches at runtime, Tarantool restarts.
func TestDurability(t *testing.T) {
	for _, tc := range []struct {
		name    string
		restart bool
	}{{Redis, false}, {Tarantool, true}, {MariaDB, false}} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := privateConfig(t)
			requireInstalled(t, cfg, tc.name)
			ctx := context.Background()
			cfg.Durability = store.DurabilityWrite
			if err := Up(ctx, cfg, tc.name); err != nil {
				t.Fatal(err)
			}
			before := statusOf(t, cfg, tc.name)
			if before.Durability != store.DurabilityWrite {
				t.Fatalf("asked for write: %v", before)
			}
			cfg.Durability = store.DurabilityFsync
			if err := Up(ctx, cfg, tc.name); err != nil {
				t.Fatal(err)
			}
			after := statusOf(t, cfg, tc.name)
			if after.Durability != store.DurabilityFsync || after.State != StateRunning {
				t.Fatalf("asked for fsync: %v", after)
			}
			if restarted := after.PID != before.PID; restarted != tc.restart {
				t.Fatalf("restarted = %v, want %v (pid %d then %d)", restarted, tc.restart, before.PID, after.PID)
			}
			// Empty durability keeps what runs.
			cfg.Durability = ""
			if err := Up(ctx, cfg, tc.name); err != nil {
				t.Fatal(err)
			}
			if again := statusOf(t, cfg, tc.name); again.PID != after.PID || again.Durability != store.DurabilityFsync {
				t.Fatalf("Up with no durability changed the server: %v, then %v", after, again)
			}
		})
	}
}

// TestDownLeavesOtherProcesses: a pid file naming a process that is not our
// server (another program, or the same server binary working elsewhere) is
// never signalled.
func TestDownLeavesOtherProcesses(t *testing.T) {
	cfg := privateConfig(t)
	requireInstalled(t, cfg, Redis)
	ctx := context.Background()
	in, err := newInstance(&cfg, redisServer{})
	if err != nil {
		t.Fatal(err)
	}
	if err := in.makeDir(); err != nil {
		t.Fatal(err)
	}

	sleeper := exec.Command("sleep", "60")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sleeper.Process.Kill(); sleeper.Wait() })

	// A redis-server of someone else's, in another directory.
	otherDir := t.TempDir()
	otherPort := freePort(t)
	if _, err := run(ctx, nil, otherDir, findBinary("redis-server"), "--port", strconv.Itoa(otherPort), "--bind", "127.0.0.1",
		"--dir", otherDir, "--save", "", "--daemonize", "yes", "--pidfile", filepath.Join(otherDir, "other.pid")); err != nil {
		t.Fatal(err)
	}
	// redis-server creates its pid file before it writes the pid in it:
	// an empty or missing file means "not yet".
	var otherPID int
	for deadline := time.Now().Add(10 * time.Second); otherPID == 0; time.Sleep(10 * time.Millisecond) {
		otherPID, err = readPID(filepath.Join(otherDir, "other.pid"))
		if err != nil && time.Now().After(deadline) {
			t.Fatal(err)
		}
		if err != nil {
			otherPID = 0
		}
	}
	t.Cleanup(func() { syscall.Kill(otherPID, syscall.SIGKILL) })

	for _, pid := range []int{sleeper.Process.Pid, otherPID} {
		if err := os.WriteFile(in.srv.pidFile(in), []byte(strconv.Itoa(pid)+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := Down(ctx, cfg, Redis); err != nil {
			t.Fatal(err)
		}
		if !alive(pid) {
			t.Fatalf("Down signalled pid %d, which is not our server", pid)
		}
		st := statusOf(t, cfg, Redis)
		if st.State != StateStopped || !strings.Contains(st.Detail, "stale pid file") {
			t.Fatalf("status with a foreign pid: %v", st)
		}
	}
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestUpRefusesATakenPort: a port held by a process we did not start is an
// error, and that process keeps it.
func TestUpRefusesATakenPort(t *testing.T) {
	cfg := privateConfig(t)
	requireInstalled(t, cfg, Redis)
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(redisServer{}.basePort()+testPortOffset))
	if err != nil {
		t.Skipf("the test port is busy: %v", err)
	}
	defer l.Close()
	err = Up(context.Background(), cfg, Redis)
	if err == nil || !strings.Contains(err.Error(), "did not start") {
		t.Fatalf("Up on a taken port: %v", err)
	}
	if st := statusOf(t, cfg, Redis); st.State != StateStopped || !strings.Contains(st.Detail, "held by a process") {
		t.Fatalf("status: %v", st)
	}
}

// TestUpWaitsForTheLock: while another holder has the server's lock, Up
// does not proceed; once it is released, Up starts the server.
func TestUpWaitsForTheLock(t *testing.T) {
	cfg := privateConfig(t)
	requireInstalled(t, cfg, Redis)
	ctx := context.Background()
	lock, err := lockFile(ctx, filepath.Join(cfg.Dir, Redis+".lock"))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- Up(ctx, cfg, Redis) }()
	select {
	case err := <-done:
		lock.unlock()
		t.Fatalf("Up returned (%v) while another holder had the lock", err)
	case <-time.After(500 * time.Millisecond):
	}
	if st := statusOf(t, cfg, Redis); st.State != StateStopped {
		t.Fatalf("the server started while the lock was held: %v", st)
	}
	lock.unlock()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if st := statusOf(t, cfg, Redis); st.State != StateRunning {
		t.Fatalf("after the lock was released: %v", st)
	}

	// A waiter gives up with its context, naming the lock.
	lock, err = lockFile(ctx, filepath.Join(cfg.Dir, Redis+".lock"))
	if err != nil {
		t.Fatal(err)
	}
	defer lock.unlock()
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if err := Up(short, cfg, Redis); err == nil || !strings.Contains(err.Error(), "lock") {
		t.Fatalf("Up with an expiring context while locked: %v", err)
	}
}

func TestConfigValidate(t *testing.T) {
	var cfg Config
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(root, ".allot", "services"); cfg.Dir != want {
		t.Errorf("default dir %s, want %s", cfg.Dir, want)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Errorf("module root %s has no go.mod", root)
	}
	bad := Config{Durability: "sometimes"}
	if err := bad.Validate(); err == nil {
		t.Error("an unknown durability passed Validate")
	}
	if _, err := serversByName([]string{"oracle"}); err == nil {
		t.Error("an unknown server name was accepted")
	}
}

// TestUnreachableDirFallsBack: when the postgres user cannot walk into
// Config.Dir (a 0700 folder), its server lives in a folder of /var/tmp
// named after Config.Dir, and Up, Status and Down agree on it.
func TestUnreachableDirFallsBack(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root runs PostgreSQL as another user")
	}
	dir := t.TempDir() // 0700: the postgres user cannot get in
	cfg := Config{Dir: filepath.Join(dir, "services"), portOffset: testPortOffset}
	requireInstalled(t, cfg, Postgres)
	want := filepath.Join(fallbackRoot(cfg.Dir), Postgres)
	t.Cleanup(func() {
		if err := Down(context.Background(), cfg, Postgres); err != nil {
			t.Errorf("cleanup: %v", err)
		}
		os.RemoveAll(filepath.Dir(want))
	})
	if err := Up(context.Background(), cfg, Postgres); err != nil {
		t.Fatal(err)
	}
	st := statusOf(t, cfg, Postgres)
	if st.State != StateRunning || st.Dir != want {
		t.Fatalf("status %v in %s, want running in %s", st, st.Dir, want)
	}
	if err := Down(context.Background(), cfg, Postgres); err != nil {
		t.Fatal(err)
	}
	if alive(st.PID) {
		t.Fatalf("pid %d survived Down", st.PID)
	}
}

// TestRedisUpWaitsForItsDataSet: Redis answers INFO while it loads its
// append-only file and refuses every command with -LOADING; Up must not
// call it running before it serves. A data set big enough to take a
// moment to load is written, Redis stopped and started again: the first
// command after Up must be served.
func TestRedisUpWaitsForItsDataSet(t *testing.T) {
	cfg := privateConfig(t)
	requireInstalled(t, cfg, Redis)
	ctx := context.Background()
	cfg.Durability = store.DurabilityWrite
	if err := Up(ctx, cfg, Redis); err != nil {
		t.Fatal(err)
	}
	addr := statusOf(t, cfg, Redis).Addr
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	const keys, batch = 1_500_000, 10_000
	value := strings.Repeat("v", 32)
	for i := 0; i < keys; i += batch {
		p := c.Pipeline()
		for k := i; k < i+batch; k++ {
			p.Set(ctx, "k"+strconv.Itoa(k), value, 0)
		}
		if _, err := p.Exec(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := Down(ctx, cfg, Redis); err != nil {
		t.Fatal(err)
	}
	if err := Up(ctx, cfg, Redis); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	got, err := c.Get(ctx, "k"+strconv.Itoa(keys-1)).Result()
	if err != nil || got != value {
		t.Fatalf("the first GET after Up: %q, %v (Up called Redis running before it served)", got, err)
	}
	t.Logf("first GET after Up served in %v", time.Since(start))
}

// xlogFlags returns the open flags of the xlog file Tarantool (pid) writes.
func xlogFlags(t *testing.T, pid int) int64 {
	t.Helper()
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range fds {
		target, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if err != nil || !strings.HasSuffix(target, ".xlog") {
			continue
		}
		info, err := os.ReadFile(fmt.Sprintf("/proc/%d/fdinfo/%s", pid, fd.Name()))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(info), "\n") {
			if v, ok := strings.CutPrefix(line, "flags:"); ok {
				flags, err := strconv.ParseInt(strings.TrimSpace(v), 8, 64)
				if err != nil {
					t.Fatalf("fdinfo of %s: %v", target, err)
				}
				return flags
			}
		}
	}
	t.Fatalf("tarantool (pid %d) has no xlog open", pid)
	return 0
}

// tarantoolWrite makes the Tarantool at addr write to its WAL.
func tarantoolWrite(t *testing.T, addr string, key int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := tarantool.Connect(ctx, tarantool.NetDialer{Address: addr, User: TarantoolUser, Password: TarantoolPassword}, tarantool.Opts{Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	eval := "box.schema.space.create('sync_test', {if_not_exists = true}); " +
		"box.space.sync_test:create_index('pk', {if_not_exists = true}); " +
		"box.space.sync_test:replace{...}"
	if _, err := conn.Do(tarantool.NewEvalRequest(eval).Args([]any{key})).Get(); err != nil {
		t.Fatal(err)
	}
}

// A Tarantool in wal_mode fsync must sync its WAL after a restart on its
// existing data as it does on a fresh one: Tarantool 2.6 wrote the first
// xlog after recovery without O_SYNC and without fsync (the init script's
// checkpoint at start works around it).
func TestTarantoolSyncsAfterARestart(t *testing.T) {
	cfg := privateConfig(t)
	requireInstalled(t, cfg, Tarantool)
	ctx := context.Background()
	cfg.Durability = store.DurabilityFsync
	if err := Up(ctx, cfg, Tarantool); err != nil {
		t.Fatal(err)
	}
	st := statusOf(t, cfg, Tarantool)
	tarantoolWrite(t, st.Addr, 1)
	if f := xlogFlags(t, st.PID); f&syscall.O_DSYNC == 0 {
		t.Fatalf("a fresh tarantool in wal_mode fsync writes its xlog with flags %o: no O_SYNC or O_DSYNC", f)
	}
	if err := Down(ctx, cfg, Tarantool); err != nil {
		t.Fatal(err)
	}
	if err := Up(ctx, cfg, Tarantool); err != nil {
		t.Fatal(err)
	}
	st = statusOf(t, cfg, Tarantool)
	tarantoolWrite(t, st.Addr, 2)
	if f := xlogFlags(t, st.PID); f&syscall.O_DSYNC == 0 {
		t.Fatalf("tarantool restarted on its data in wal_mode fsync writes its xlog with flags %o: no O_SYNC or O_DSYNC, so nothing is synced", f)
	}
}
