package main

import (
	"bytes"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// busyAddr returns a loopback address something listens on for the rest
// of the test.
func busyAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln.Addr().String()
}

// absent fails when path exists.
func absent(t *testing.T, path, what string) {
	t.Helper()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("%s: %s exists after the error (%v)", what, path, err)
	}
}

// --help printed a password or token taken from the environment as the
// flag's default (relay and ingest --password from ALLOT_PASSWORD, bench
// serve --token from ALLOT_BENCH_TOKEN), where serve hides its own; and
// ingest's help did not say that ALLOT_PASSWORD sets it.
func TestAudit17HelpPrintsNoSecretFromTheEnvironment(t *testing.T) {
	const secret = "audit17-s3cret-value"
	t.Setenv("ALLOT_PASSWORD", secret)
	t.Setenv("ALLOT_BENCH_TOKEN", secret)
	t.Setenv("ALLOT_RELAY_AMQP", "amqp://u:"+secret+"@127.0.0.1:1/")
	for _, c := range []struct {
		args []string
		env  string
	}{
		{[]string{"relay", "--help"}, "ALLOT_PASSWORD"},
		{[]string{"relay", "--help"}, "ALLOT_RELAY_AMQP"},
		{[]string{"ingest", "mysql", "--help"}, "ALLOT_PASSWORD"},
		{[]string{"bench", "serve", "--help"}, "ALLOT_BENCH_TOKEN"},
	} {
		code, stdout, stderr := runCLI(c.args...)
		if code != 0 {
			t.Errorf("%v: exit %d: %s", c.args, code, stderr)
		}
		if strings.Contains(stdout+stderr, secret) {
			t.Errorf("%v printed the secret from %s", c.args, c.env)
		}
		if !strings.Contains(stdout, "(env "+c.env+")") {
			t.Errorf("%v does not name %s as '(env %s)'", c.args, c.env, c.env)
		}
	}
}

// bench wrote --out after the first run and --report after the last, so a
// directory that did not exist (or a directory given as the file) was
// found only once the runs were done, and their results were lost; --out
// and --report naming one file, or the --ops-file, had the report replace
// the results or the results replace the ops.
func TestAudit17BenchChecksItsFilesBeforeRunning(t *testing.T) {
	dir := t.TempDir()
	ops := filepath.Join(dir, "w.ops")
	if code, _, stderr := runCLI("gen", "--rows", "10", "--ops", "50", "-o", ops); code != 0 {
		t.Fatalf("gen: exit %d: %s", code, stderr)
	}
	opsBefore, err := os.ReadFile(ops)
	if err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing", "r.json")
	same := filepath.Join(dir, "same")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--out", missing}, "--out " + missing},
		{[]string{"--report", filepath.Join(dir, "missing", "r.html")}, "--report"},
		{[]string{"--out", dir}, "is a directory"},
		{[]string{"--out", same, "--report", same}, "--out and --report"},
		{[]string{"--ops-file", ops, "--out", ops}, "is the --ops-file"},
		{[]string{"--ops-file", ops, "--cpuprofile", filepath.Join(dir, ".", "w.ops")}, "is the --ops-file"},
	} {
		args := append([]string{"bench", "--store", "memory", "--workers", "2", "--quiet"}, c.args...)
		if !slices.Contains(c.args, "--ops-file") {
			args = append(args, "--rows", "10", "--ops", "50")
		}
		code, stdout, stderr := runCLI(args...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 naming %q", c.args, code, stderr, c.want)
		}
		if strings.Contains(stdout, "check:") {
			t.Errorf("%v: the runs ran before the error:\n%s", c.args, stdout)
		}
	}
	absent(t, same, "--out and --report one file")
	absent(t, filepath.Join(dir, "missing"), "--out in a missing directory")
	if after, err := os.ReadFile(ops); err != nil || !bytes.Equal(after, opsBefore) {
		t.Errorf("the --ops-file changed (%v)", err)
	}
	noTempFiles(t, dir)
}

// bench --kill ignored --out, --report, --preset and the other flags of a
// timed run without a word (no results file was written), and on the
// default store, embedded, printed an ERROR row per durability mode
// instead of saying at once that an in-process store has no server to
// kill.
func TestAudit17BenchKillRefusesWhatItWouldIgnore(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "r.json")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--out", out}, "--out does not apply"},
		{[]string{"--report", filepath.Join(dir, "r.html")}, "--report does not apply"},
		{[]string{"--preset", "hot"}, "--preset does not apply"},
		{[]string{"--duration", "1s"}, "--duration does not apply"},
		{[]string{}, "memory runs in the bench's own process"},
	} {
		args := append([]string{"bench", "--kill", "1", "--store", "memory", "--durability", "none", "--ops", "20", "--quiet"}, c.args...)
		code, _, stderr := runCLI(args...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and %q", c.args, code, stderr, c.want)
		}
	}
	absent(t, out, "--kill --out")
}

// bench serve made (and locked) its --data directory before listening, so
// an address in use or a port out of range left it behind; the errors
// read "allot bench: bench serve: ...", and a port out of range exited 1
// like a busy one.
func TestAudit17BenchServeListenFailureLeavesNoDataDir(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		listen string
		code   int
	}{
		{busyAddr(t), 1},
		{"127.0.0.1:99999", 2},
	} {
		data := filepath.Join(dir, "history")
		code, _, stderr := runCLI("bench", "serve", "--listen", c.listen, "--data", data)
		if code != c.code || !strings.HasPrefix(stderr, "allot bench serve: --listen "+c.listen) {
			t.Errorf("--listen %s: exit %d, stderr %q; want exit %d and 'allot bench serve: --listen %s'", c.listen, code, stderr, c.code, c.listen)
		}
		if strings.Contains(stderr, "allot bench: ") {
			t.Errorf("--listen %s: stderr %q has the prefix of bench", c.listen, stderr)
		}
		absent(t, data, "bench serve --listen "+c.listen)
	}
}

// serve took a zero limit given on the command line (or in its variable)
// as the default (--connections-max 0 served 9000), accepted a negative
// --shutdown-timeout, exited 1 for a --pprof address that is no loopback
// host:port, did not name ALLOT_DURABILITY when its value was bad, and
// made the data directory with a fresh journal before finding its RESP
// address in use. Each listens on a busy address, so that a value let
// through fails there rather than serving.
func TestAudit17ServeRefusesBadValuesBeforeTheDataDir(t *testing.T) {
	busy := busyAddr(t)
	dir := t.TempDir()
	for i, c := range []struct {
		args []string
		env  [2]string
		code int
		want string
	}{
		{args: []string{"--connections-max", "0"}, code: 2, want: "--connections-max must be positive, got 0"},
		{args: []string{"--request-bytes-max", "0"}, code: 2, want: "--request-bytes-max must be positive"},
		{args: []string{"--change-streams-max", "0"}, code: 2, want: "--change-streams-max must be positive"},
		{env: [2]string{"ALLOT_PIPELINE_DEPTH_MAX", "0"}, code: 2, want: "ALLOT_PIPELINE_DEPTH_MAX (environment) must be positive"},
		{args: []string{"--auth-timeout", "0s"}, code: 2, want: "--auth-timeout must be positive"},
		{args: []string{"--shutdown-timeout", "-1s"}, code: 2, want: "--shutdown-timeout must be 0 (close connections at once) or more"},
		{args: []string{"--pprof", "8.8.8.8:6060"}, code: 2, want: "not loopback"},
		{env: [2]string{"ALLOT_DURABILITY", "fast"}, code: 2, want: "ALLOT_DURABILITY (environment)"},
		{code: 1, want: "--resp " + busy + ": "},
	} {
		if c.env[0] != "" {
			t.Setenv(c.env[0], c.env[1])
		}
		data := filepath.Join(dir, "data", string(rune('a'+i)))
		args := append([]string{"serve", "--resp", busy, "--http", "127.0.0.1:0", "--data", data}, c.args...)
		code, _, stderr := runCLI(args...)
		if code != c.code || !strings.Contains(stderr, c.want) {
			t.Errorf("%v %v: exit %d, stderr %q; want exit %d and %q", c.args, c.env, code, stderr, c.code, c.want)
		}
		absent(t, data, strings.Join(args, " "))
		if c.env[0] != "" {
			os.Unsetenv(c.env[0])
		}
	}
}

// shards recover took a negative --after as "at once", and services a
// --timeout of 0 as its default of 2 minutes: bad values, exit 2.
func TestAudit17NegativeDurations(t *testing.T) {
	// An empty --cluster fails at once: a value let through ends there.
	code, _, stderr := runCLI("shards", "recover", "--cluster", "", "--after", "-1s")
	if code != 2 || !strings.Contains(stderr, "--after must be 0 (at once) or more, got -1s") {
		t.Errorf("shards recover --after -1s: exit %d, stderr %q; want exit 2 naming --after", code, stderr)
	}
	for _, v := range []string{"0s", "-1s"} {
		code, _, stderr := runCLI("services", "status", "--timeout", v)
		if code != 2 || !strings.Contains(stderr, "--timeout must be positive, got "+v) {
			t.Errorf("services status --timeout %s: exit %d, stderr %q; want exit 2 naming --timeout", v, code, stderr)
		}
	}
}

// --shutdown-timeout 0 closes the connections at once on SIGTERM: the
// shutdown's deadline ending is what was asked for, and serve exits 0 (it
// exited 1, "context deadline exceeded", on every SIGTERM; refusing 0, as
// the zero limits are, would have taken the value away).
func TestAudit17ShutdownTimeoutZeroStopsCleanly(t *testing.T) {
	c := startServeLimited(t, 4096, nil, "--shutdown-timeout", "0")
	if _, err := c.outcome(t); err != nil {
		t.Fatalf("serve --shutdown-timeout 0 did not start: %v\n%s", err, c.stderr)
	}
	c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("serve did not stop on SIGTERM:\n%s", c.stderr)
	}
	if c.err != nil {
		t.Fatalf("serve --shutdown-timeout 0 stopped with %v:\n%s", c.err, c.stderr)
	}
}

// Two outputs on one device or FIFO (as --out /dev/stdout --report
// /dev/stdout) are written in turn, not one replacing the other: the
// check that refuses two outputs naming one regular file let them be.
func TestAudit17BenchOutputsMayShareAFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "out.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	var stop atomic.Bool
	drained := make(chan []byte)
	go func() {
		// Each open waits for a writer; reading to EOF ends its turn (or
		// both writers', when the second opened during the first).
		var got bytes.Buffer
		for !stop.Load() {
			f, err := os.Open(fifo)
			if err != nil {
				break
			}
			io.Copy(&got, f)
			f.Close()
		}
		drained <- got.Bytes()
	}()
	code, _, stderr := runCLI("bench", "--store", "memory", "--workers", "2", "--rows", "10", "--ops", "50", "--quiet", "--out", fifo, "--report", fifo)
	stop.Store(true)
	// The reader waits in its open: a writer that writes nothing ends it.
	if w, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
		w.Close()
	}
	got := <-drained
	if code != 0 {
		t.Fatalf("--out and --report on one FIFO: exit %d: %s", code, stderr)
	}
	if !bytes.Contains(got, []byte(`"version": 1`)) || !bytes.Contains(got, []byte("<!DOCTYPE html>")) {
		t.Errorf("the FIFO got %d bytes, want the results (JSON) and the report (HTML): %.200q", len(got), got)
	}
}
