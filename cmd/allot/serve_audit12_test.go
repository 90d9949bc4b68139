package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"allot/internal/syncbuf"
	"allot/server"
	"allot/server/servertest"
)

// serveChild is allot serve run as a child under a file limit.
type serveChild struct {
	cmd    *exec.Cmd
	stderr *syncbuf.Buffer // the scanner writes it while the test reads
	lines  chan string
	done   chan struct{} // closed once the child exited, with err set
	err    error
}

// startServeLimited runs allot serve with args under `ulimit -n files`
// (soft and hard), in a fresh data directory, on ports the kernel picks.
func startServeLimited(t *testing.T, files int, env []string, args ...string) *serveChild {
	t.Helper()
	bin := servertest.BuildAllot(t)
	args = append([]string{"serve", "--data", t.TempDir(), "--resp", "127.0.0.1:0", "--http", "127.0.0.1:0"}, args...)
	script := fmt.Sprintf(`ulimit -n %d || exit 99; exec "$0" "$@"`, files)
	cmd := exec.Command("sh", append([]string{"-c", script, bin}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	c := &serveChild{cmd: cmd, stderr: &syncbuf.Buffer{}, lines: make(chan string, 1000), done: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			c.stderr.Write([]byte(sc.Text() + "\n"))
			select {
			case c.lines <- sc.Text():
			default:
			}
		}
		close(c.lines)
	}()
	go func() {
		c.err = cmd.Wait()
		pw.Close()
		close(c.done)
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-c.done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
		}
	})
	return c
}

// outcome waits for the child to print "ready" or to exit, and returns the
// RESP address it serves on ("" when it exited), with its exit error.
func (c *serveChild) outcome(t *testing.T) (respAddr string, exit error) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	addr := regexp.MustCompile(`RESP on (\S+)`)
	for {
		select {
		case line, ok := <-c.lines:
			if !ok {
				select {
				case <-c.done:
					return "", c.err
				case <-timeout:
					t.Fatalf("allot serve closed its stderr and did not exit:\n%s", c.stderr)
				}
			}
			if m := addr.FindStringSubmatch(line); m != nil {
				respAddr = m[1]
			}
			if strings.HasSuffix(line, "allot serve: ready") {
				return respAddr, nil
			}
		case <-timeout:
			t.Fatalf("allot serve neither ready nor gone in 30 s:\n%s", c.stderr)
		}
	}
}

// A file limit below what --connections-max asks for (two listeners of
// that many connections, and a reserve for the journal, snapshots and
// change-stream followers) refuses to start, exit 2, naming both numbers
// and the flag: "too many open files" later would fail a snapshot or stop
// the engine at a segment rotation.
func TestServeRefusesAFileLimitBelowItsConnections(t *testing.T) {
	c := startServeLimited(t, 200, nil, "--connections-max", "10000")
	addr, err := c.outcome(t)
	if err == nil {
		t.Fatalf("allot serve started (RESP on %s) with ulimit -n 200 and --connections-max 10000:\n%s", addr, c.stderr)
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("exit %v, want 2:\n%s", err, c.stderr)
	}
	for _, want := range []string{"200", "20256", "--connections-max", "10000", "ulimit -n"} {
		if !strings.Contains(c.stderr.String(), want) {
			t.Errorf("the refusal does not name %q:\n%s", want, c.stderr)
		}
	}
	// 2 × 40 + 256 = 336 descriptors do not fit 300; with one protocol,
	// 40 + 256 do.
	c = startServeLimited(t, 300, nil, "--connections-max", "40")
	if _, err := c.outcome(t); err == nil || !strings.Contains(c.stderr.String(), "lower --connections-max to at most 22") {
		t.Fatalf("ulimit -n 300, --connections-max 40: %v, want a refusal suggesting 22:\n%s", err, c.stderr)
	}
	c = startServeLimited(t, 300, nil, "--connections-max", "40", "--http", "")
	if _, err := c.outcome(t); err != nil {
		t.Fatalf("RESP only, --connections-max 40, ulimit -n 300: %v\n%s", err, c.stderr)
	}
}

// The default --connections-max that does not fit the machine's file
// limit is lowered to what fits, with a warning, as Redis lowers
// maxclients: a machine with ulimit -n 4096 must run allot serve with
// its defaults. Only a value given (flag or environment) is refused.
func TestServeDefaultConnectionsFitTheFileLimit(t *testing.T) {
	c := startServeLimited(t, 300, nil)
	if _, err := c.outcome(t); err != nil {
		t.Fatalf("ulimit -n 300 with the default --connections-max: %v\n%s", err, c.stderr)
	}
	if !strings.Contains(c.stderr.String(), "serving at most 22 connections per protocol") {
		t.Errorf("no warning that the connections were lowered to 22:\n%s", c.stderr)
	}
	c = startServeLimited(t, 300, []string{"ALLOT_CONNECTIONS_MAX=10000"})
	if _, err := c.outcome(t); err == nil {
		t.Fatalf("ALLOT_CONNECTIONS_MAX=10000 under ulimit -n 300 started:\n%s", c.stderr)
	}
}

// checkFileLimit's arithmetic and message, and FilesNeeded per protocol.
func TestCheckFileLimit(t *testing.T) {
	both := server.Config{RESPAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0"}
	if err := both.Validate(); err != nil {
		t.Fatal(err)
	}
	if n := both.FilesNeeded(); n != 2*9000+server.FilesReserve {
		t.Fatalf("the defaults need %d descriptors", n)
	}
	// Go leaves the soft limit one below the hard one: 19,999 here.
	if err := checkFileLimit(&both, 19999); err != nil {
		t.Fatalf("the defaults under a limit of 19,999: %v", err)
	}
	err := checkFileLimit(&both, 1000)
	if err == nil || !strings.Contains(err.Error(), "is 1000, below the 18256") || !strings.Contains(err.Error(), "for RESP and for HTTP (18000)") ||
		!strings.Contains(err.Error(), "at most 372") {
		t.Fatalf("the defaults under a limit of 1,000: %v", err)
	}
	resp := server.Config{RESPAddr: "127.0.0.1:0", ConnectionsMax: 744}
	if err := resp.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := checkFileLimit(&resp, 1000); err != nil {
		t.Fatalf("RESP only, 744 connections, a limit of 1,000: %v", err)
	}
	resp.ConnectionsMax = 745
	if err := checkFileLimit(&resp, 1000); err == nil || !strings.Contains(err.Error(), "for RESP (745)") {
		t.Fatalf("RESP only, 745 connections, a limit of 1,000: %v", err)
	}
}

// The defaults start under a file limit of 20,000 (this machine's hard
// limit): ConnectionsMaxDefault is sized for it.
func TestServeDefaultsFitAFileLimitOf20000(t *testing.T) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Max < 20000 {
		t.Skipf("the hard file limit here is %d (%v), under 20,000", lim.Max, err)
	}
	c := startServeLimited(t, 20000, nil)
	if _, err := c.outcome(t); err != nil {
		t.Fatalf("allot serve with its defaults under ulimit -n 20000: %v\n%s", err, c.stderr)
	}
}

// --keys-max (and ALLOT_KEYS_MAX) reach the engine: past it a new key is
// -UNAVAILABLE naming the flag, a repeat is answered.
func TestServeKeysMaxFlag(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  []string
		args []string
	}{
		{"flag", nil, []string{"--keys-max", "1"}},
		{"env", []string{"ALLOT_KEYS_MAX=1"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := startServeLimited(t, 20000, tc.env, tc.args...)
			addr, err := c.outcome(t)
			if err != nil || addr == "" {
				t.Fatalf("allot serve: %q %v\n%s", addr, err, c.stderr)
			}
			nc, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			nc.SetDeadline(time.Now().Add(10 * time.Second))
			br := bufio.NewReader(nc)
			send := func(cmd string) string {
				t.Helper()
				if _, err := fmt.Fprintf(nc, "%s\r\n", cmd); err != nil {
					t.Fatal(err)
				}
				line, err := br.ReadString('\n')
				if err != nil {
					t.Fatal(err)
				}
				return strings.TrimRight(line, "\r\n")
			}
			if got := send("CAPTURE s new own 1 ID k1"); got != "*0" && !strings.HasPrefix(got, "-INSUFFICIENT") {
				t.Fatalf("first key: %q", got)
			}
			if got := send("CAPTURE s new own 1 ID k2"); !strings.HasPrefix(got, "-UNAVAILABLE ") || !strings.Contains(got, "--keys-max") {
				t.Fatalf("a second key past --keys-max 1: %q", got)
			}
			if got := send("CAPTURE s new own 1 ID k1"); !strings.HasPrefix(got, "-INSUFFICIENT") {
				t.Fatalf("a repeat of the kept key: %q", got)
			}
		})
	}
}
