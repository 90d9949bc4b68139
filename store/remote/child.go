package remote

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"allot/internal/fsinfo"
	"allot/store"
)

// logTailLines is how many of the child's last log lines an error quotes.
const logTailLines = 20

// Process is an allot serve child process, started by the store (or by a
// test) on a free loopback port.
type Process struct {
	cmd      *exec.Cmd
	addr     string
	httpAddr string // its /metrics, for the bench's stage breakdown
	dataDir  string
	tempDir  bool // dataDir was created here and is removed on stop
	exited   chan struct{}
	waitErr  error

	mu   sync.Mutex
	tail []string
}

// Binary is the allot executable a server is started with: explicit,
// else as findBinary resolves it.
func Binary(explicit string) (string, error) { return findBinary(explicit) }

// findBinary resolves the allot executable: explicit, $ALLOT_BIN, the
// running executable when it is allot, allot on $PATH.
func findBinary(explicit string) (string, error) {
	if explicit != "" {
		return explicit, nil
	}
	if p := os.Getenv("ALLOT_BIN"); p != "" {
		return p, nil
	}
	// allot bench runs in the allot binary itself (perhaps renamed, as
	// allot-v2): a name starting with allot that is not a test binary.
	if exe, err := os.Executable(); err == nil {
		if base := filepath.Base(exe); strings.HasPrefix(base, "allot") && !strings.HasSuffix(base, ".test") {
			return exe, nil
		}
	}
	if p, err := exec.LookPath("allot"); err == nil {
		return p, nil
	}
	return "", errors.New("store/remote: no allot executable to start a server with: give the bench --addr of a running allot serve, set ALLOT_BIN, or put allot on PATH")
}

// StartProcess starts allot serve (binary as findBinary resolves it) with
// cfg.DataDir (a temporary directory, removed on Stop or Kill, when empty)
// and cfg.Durability, RESP and HTTP (its /metrics, for the stage
// breakdown) on free loopback ports, and extra flags appended. It returns once the server says it is ready.
func StartProcess(ctx context.Context, binary string, cfg store.Config, extra ...string) (*Process, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	bin, err := findBinary(binary)
	if err != nil {
		return nil, err
	}
	ch := &Process{dataDir: cfg.DataDir, exited: make(chan struct{})}
	if ch.dataDir == "" {
		// Not the system's temporary folder, often tmpfs.
		if ch.dataDir, err = fsinfo.TempDataDir("serve-"); err != nil {
			return nil, fmt.Errorf("store/remote: temporary data directory: %w", err)
		}
		ch.tempDir = true
	}
	ch.cmd = exec.Command(bin, "serve",
		"--data", ch.dataDir,
		"--durability", string(cfg.Durability),
		"--resp", "127.0.0.1:0",
		"--http", "127.0.0.1:0",
		"--connections-max", fmt.Sprint(max(1024, 4*cfg.Workers)))
	ch.cmd.Args = append(ch.cmd.Args, extra...)
	// The child's settings are its flags: an ALLOT_* variable of the
	// bench's environment must not change them (a password, say).
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ALLOT_") {
			ch.cmd.Env = append(ch.cmd.Env, kv)
		}
	}
	// If the bench dies, the server gets SIGTERM: it finishes, syncs and
	// exits instead of running on unattended.
	ch.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	stderr, err := ch.cmd.StderrPipe()
	if err != nil {
		ch.cleanup()
		return nil, err
	}
	if err := ch.cmd.Start(); err != nil {
		ch.cleanup()
		return nil, fmt.Errorf("store/remote: start %s serve: %w", bin, err)
	}
	ready := make(chan string, 1)
	go ch.readLog(stderr, ready)
	go func() {
		ch.waitErr = ch.cmd.Wait()
		close(ch.exited)
	}()
	select {
	case addr := <-ready:
		ch.addr = addr
		return ch, nil
	case <-ch.exited:
		ch.cleanup()
		return nil, fmt.Errorf("store/remote: allot serve exited before it was ready (%v):\n%s", ch.waitErr, ch.logTail())
	case <-ctx.Done():
		ch.Kill()
		return nil, fmt.Errorf("store/remote: allot serve not ready: %w:\n%s", ctx.Err(), ch.logTail())
	}
}

// readLog keeps the child's last log lines and sends the RESP address once
// the child says it is ready. It drains stderr to the end, so that the
// child never blocks on a full pipe.
func (ch *Process) readLog(r io.Reader, ready chan<- string) {
	sc := bufio.NewScanner(r)
	addr := ""
	for sc.Scan() {
		line := sc.Text()
		ch.mu.Lock()
		ch.tail = append(ch.tail, line)
		if len(ch.tail) > logTailLines {
			ch.tail = ch.tail[1:]
		}
		ch.mu.Unlock()
		if a, ok := strings.CutPrefix(line, "allot serve: RESP on "); ok {
			addr = a
		}
		if a, ok := strings.CutPrefix(line, "allot serve: HTTP on "); ok {
			ch.httpAddr = a // before "ready": Stages reads it after
		}
		if line == "allot serve: ready" && addr != "" {
			ready <- addr
		}
	}
}

func (ch *Process) logTail() string {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return strings.Join(ch.tail, "\n")
}

// Addr returns the server's RESP address.
func (ch *Process) Addr() string { return ch.addr }

// DataDir returns the server's data directory.
func (ch *Process) DataDir() string { return ch.dataDir }

// Log returns the server's last log lines.
func (ch *Process) Log() string { return ch.logTail() }

// Stop sends SIGTERM and waits for the server to exit (SIGKILL after
// timeout), then removes a temporary data directory. A server that does
// not exit 0 is an error.
func (ch *Process) Stop(timeout time.Duration) error {
	defer ch.cleanup()
	ch.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-ch.exited:
	case <-time.After(timeout):
		ch.cmd.Process.Kill()
		<-ch.exited
		return fmt.Errorf("store/remote: allot serve did not stop within %v of SIGTERM; killed:\n%s", timeout, ch.logTail())
	}
	if ch.waitErr != nil {
		return fmt.Errorf("store/remote: allot serve exited with %v:\n%s", ch.waitErr, ch.logTail())
	}
	return nil
}

// Kill sends SIGKILL and waits for the server to be gone: a crash, as far
// as its data directory can tell. A temporary data directory is removed.
func (ch *Process) Kill() {
	ch.cmd.Process.Kill()
	<-ch.exited
	ch.cleanup()
}

func (ch *Process) cleanup() {
	if ch.tempDir {
		os.RemoveAll(ch.dataDir)
		ch.tempDir = false
	}
}
