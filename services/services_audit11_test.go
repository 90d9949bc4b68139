package services

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"allot/store"
)

// standIn copies the binary at path (found on PATH) to dir/name and
// starts it there with args, as a child of the test; it writes the pid to
// pidFile. The copy's name and working directory make identify take it
// for the server named so that lives in dir.
func standIn(t *testing.T, path, dir, name, pidFile string, args ...string) *exec.Cmd {
	t.Helper()
	src, err := exec.LookPath(path)
	if err != nil {
		t.Skipf("no %s: %v", path, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	exe := filepath.Join(dir, name)
	out, err := os.OpenFile(exe, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, p := range descendants(cmd.Process.Pid) {
			syscall.Kill(p, syscall.SIGKILL)
		}
		cmd.Process.Kill()
		cmd.Wait()
	})
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return cmd
}

// shortDir is a temporary directory short enough for a server's unix
// socket path (t.TempDir's are named after the test).
func shortDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "a11-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// A server that runs in one durability whatever it is asked (the NATS
// cluster: sync_interval always; RabbitMQ: durability is each queue's
// and message's) is stood in for by a process of the right name that
// answers the probe as the real one does.
type fixedNATS struct{ natsServer }

func (fixedNATS) probe(context.Context, *instance) (probeResult, error) {
	return probeResult{version: "nats-server (stand-in)", durability: store.DurabilityFsync}, nil
}

type fixedRabbitMQ struct{ rabbitmqServer }

func (fixedRabbitMQ) probe(context.Context, *instance) (probeResult, error) {
	return probeResult{version: "RabbitMQ (stand-in)", durability: store.DurabilityFsync}, nil
}

// `allot services up nats --durability write` printed "nats-1:
// durability set to write" and changed nothing: the cluster always
// syncs. Up now says what is true, and leaves the server be.
func TestAudit11UpSaysWhenAServerIgnoresTheDurability(t *testing.T) {
	for _, s := range []server{fixedNATS{natsServer{node: 1}}, fixedRabbitMQ{}} {
		t.Run(s.name(), func(t *testing.T) {
			var log strings.Builder
			cfg := Config{Dir: shortDir(t), Durability: store.DurabilityWrite, Timeout: 5 * time.Second, Log: &log, portOffset: 2900}
			if err := cfg.Validate(); err != nil {
				t.Fatal(err)
			}
			in, err := newInstance(&cfg, s)
			if err != nil {
				t.Fatal(err)
			}
			cmd := standIn(t, "sleep", in.dir, s.exeNames()[0], s.pidFile(in), "60")
			ctx := context.Background()
			if err := locked(ctx, &cfg, s, func(in *instance) error { return upOne(ctx, in) }); err != nil {
				t.Fatal(err)
			}
			got := log.String()
			if strings.Contains(got, "set to write") || !strings.Contains(got, "ignores --durability write") {
				t.Errorf("up --durability write said %q; want that %s ignores it, not that it was set", got, s.name())
			}
			if !alive(cmd.Process.Pid) {
				t.Errorf("the server was stopped")
			}
			// Asked for what it runs in, it has nothing to say.
			log.Reset()
			cfg.Durability = store.DurabilityFsync
			if err := locked(ctx, &cfg, s, func(in *instance) error { return upOne(ctx, in) }); err != nil {
				t.Fatal(err)
			}
			if log.Len() != 0 {
				t.Errorf("up --durability fsync said %q", log.String())
			}
		})
	}
}

// Kill waited reapWait (10 s) for every killed process still in /proc as
// a zombie: one that is our own child, which nobody but us reaps, and any
// orphan whose new parent does not reap (this container's init never
// does). It reaps its children and does not wait for zombies it cannot.
func TestAudit11KillNoticesExitedProcessesPromptly(t *testing.T) {
	cfg := Config{Dir: shortDir(t), portOffset: 2900}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	in, err := newInstance(&cfg, redisServer{})
	if err != nil {
		t.Fatal(err)
	}
	// A shell named redis-server, our child, with two children of its
	// own that become orphans when it dies.
	cmd := standIn(t, "sh", in.dir, "redis-server", redisServer{}.pidFile(in), "-c", "sleep 60 & sleep 60 & wait")
	deadline := time.Now().Add(5 * time.Second)
	for len(descendants(cmd.Process.Pid)) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("the stand-in's children did not start: %v", descendants(cmd.Process.Pid))
		}
		time.Sleep(10 * time.Millisecond)
	}
	start := time.Now()
	pid, err := Kill(context.Background(), cfg, Redis)
	took := time.Since(start)
	if err != nil || pid != cmd.Process.Pid {
		t.Fatalf("Kill: pid %d, %v; want %d", pid, err, cmd.Process.Pid)
	}
	if took > 5*time.Second { // half of the 10 s it waited, and room for a loaded machine
		t.Errorf("Kill of a server whose processes were dead at once took %v", took)
	}
	if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err == nil {
		t.Errorf("Kill left our child %d a zombie", pid)
	}
}
