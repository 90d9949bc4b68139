package server_test

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"allot/client"
	"allot/inventory"
	"allot/server/servertest"
	"allot/store"
	"allot/store/remote"
)

// TestServeLifecycle runs allot serve as a process: the startup log names
// the data directory, the mode and the address; SIGTERM exits 0 after the
// journal is durable; a restart on the same directory serves the same
// state.
func TestServeLifecycle(t *testing.T) {
	bin := servertest.BuildAllot(t)
	dir := t.TempDir()
	ctx := context.Background()
	cfg := store.Config{DataDir: dir, Durability: store.DurabilityFsync}
	p, err := remote.StartProcess(ctx, bin, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"allot serve: data dir " + dir + ", durability fsync", "allot serve: RESP on " + p.Addr(), "allot serve: ready"} {
		if !strings.Contains(p.Log(), want) {
			t.Errorf("startup log lacks %q:\n%s", want, p.Log())
		}
	}
	row := inventory.RowKey{SKU: "s", Warehouse: "w", Condition: "c", Source: "o"}
	c, err := client.New(client.Config{Addr: p.Addr()})
	if err != nil {
		t.Fatal(err)
	}
	c.Stock(ctx, row, 10, 7)
	if r, err := c.Capture(ctx, row.Group(), 3, nil); err != nil || r.Code != inventory.CodeOK {
		t.Fatalf("capture: %+v %v", r, err)
	}
	c.Close()
	if err := p.Stop(30 * time.Second); err != nil {
		t.Fatalf("SIGTERM: %v", err)
	}
	if !strings.Contains(p.Log(), "allot serve: stopped; journal durable in "+dir) {
		t.Errorf("shutdown log:\n%s", p.Log())
	}
	p, err = remote.StartProcess(ctx, bin, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop(30 * time.Second)
	c, err = client.New(client.Config{Addr: p.Addr()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if r, err := c.Get(ctx, row); err != nil || r.Count != 7 || r.Price != 7 {
		t.Fatalf("after restart: %+v %v, want count 7 price 7", r, err)
	}
}

// serveOutcome runs allot serve with env and args until it is ready (then
// SIGTERMs it) or exits, and returns its exit code (0 when it became
// ready and stopped cleanly) and its output.
func serveOutcome(t *testing.T, env []string, args ...string) (int, string) {
	t.Helper()
	bin := servertest.BuildAllot(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"serve", "--data", t.TempDir()}, args...)...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ALLOT_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		out.WriteString(sc.Text() + "\n")
		if sc.Text() == "allot serve: ready" {
			cmd.Process.Signal(syscall.SIGTERM)
		}
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), out.String()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0, out.String()
}

func TestServeFlagsAndEnvironment(t *testing.T) {
	cases := []struct {
		name string
		env  []string
		args []string
		code int
		want string
	}{
		{"non-loopback refused", nil, []string{"--resp", "0.0.0.0:0", "--http", ""}, 2,
			"allot serve: server: RESP address 0.0.0.0:0 is not loopback: set a password (--requirepass) or allow it without one (--insecure)"},
		{"non-loopback with --insecure", nil, []string{"--resp", "0.0.0.0:0", "--http", "", "--insecure"}, 0, "allot serve: RESP on [::]:"},
		{"non-loopback with a password from the environment", []string{"ALLOT_REQUIREPASS=pw"}, []string{"--resp", "0.0.0.0:0", "--http", ""}, 0, "allot serve: ready"},
		{"addresses and mode from the environment", []string{"ALLOT_RESP=127.0.0.1:0", "ALLOT_HTTP=127.0.0.1:0", "ALLOT_DURABILITY=write"}, nil, 0, "durability write"},
		{"flag beats environment", []string{"ALLOT_DURABILITY=write"}, []string{"--resp", "127.0.0.1:0", "--http", "", "--durability", "none"}, 0, "durability none"},
		{"bad number in the environment", []string{"ALLOT_ARGS_MAX=lots"}, []string{"--resp", "127.0.0.1:0"}, 2, `ALLOT_ARGS_MAX="lots" is not an integer`},
		{"bad durability", nil, []string{"--durability", "sometimes", "--resp", "127.0.0.1:0"}, 2, `engine: unknown durability "sometimes" (want fsync, write or none)`},
		{"limit below its floor", nil, []string{"--resp", "127.0.0.1:0", "--args-max", "2"}, 2, "args max must be at least 9"},
		{"bad RESP I/O", nil, []string{"--resp", "127.0.0.1:0", "--resp-io", "threads"}, 2, `server: RESP I/O "threads": want "loop" or "goroutine"`},
		{"RESP I/O from the environment", []string{"ALLOT_RESP_IO=goroutine"}, []string{"--resp", "127.0.0.1:0", "--http", ""}, 0, "allot serve: RESP I/O goroutine"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out := serveOutcome(t, c.env, c.args...)
			if code != c.code || !strings.Contains(out, c.want) {
				t.Fatalf("exit %d (want %d), output lacks %q:\n%s", code, c.code, c.want, out)
			}
		})
	}
}

// TestServeHelp checks that --help documents every flag with its
// environment variable.
func TestServeHelp(t *testing.T) {
	bin := servertest.BuildAllot(t)
	out, err := exec.Command(bin, "serve", "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("serve --help: %v\n%s", err, out)
	}
	for _, f := range []string{"data", "durability", "resp", "http", "requirepass", "insecure", "request-bytes-max", "args-max", "connections-max", "pipeline-depth-max", "read-buffer-bytes-max", "resp-io", "shutdown-timeout", "pprof"} {
		env := "ALLOT_" + strings.ToUpper(strings.ReplaceAll(f, "-", "_"))
		flagLine := regexp.MustCompile(`(?m)^  -` + f + `( |$)`)
		if !flagLine.Match(out) || !strings.Contains(string(out), "(env "+env+")") {
			t.Errorf("--help lacks -%s or %s:\n%s", f, env, out)
		}
	}
}
