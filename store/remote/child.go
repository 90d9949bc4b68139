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

	"allot/store"
)

// logTailLines is how many of the child's last log lines an error quotes.
const logTailLines = 20

// child is an allot serve process started by the store.
type child struct {
	cmd     *exec.Cmd
	addr    string
	dataDir string
	tempDir bool // dataDir was created here and is removed on stop
	exited  chan struct{}
	waitErr error

	mu   sync.Mutex
	tail []string
}

// findBinary resolves the allot executable: explicit, $ALLOT_BIN, the
// running executable when it is allot, allot on $PATH.
func findBinary(explicit string) (string, error) {
	if explicit != "" {
		return explicit, nil
	}
	if p := os.Getenv("ALLOT_BIN"); p != "" {
		return p, nil
	}
	if exe, err := os.Executable(); err == nil && filepath.Base(exe) == "allot" {
		return exe, nil
	}
	if p, err := exec.LookPath("allot"); err == nil {
		return p, nil
	}
	return "", errors.New("store/remote: no allot executable to start a server with: give the bench --addr of a running allot serve, set ALLOT_BIN, or put allot on PATH")
}

func startChild(ctx context.Context, cfg store.Config, binary string) (*child, error) {
	bin, err := findBinary(binary)
	if err != nil {
		return nil, err
	}
	ch := &child{dataDir: cfg.DataDir, exited: make(chan struct{})}
	if ch.dataDir == "" {
		if ch.dataDir, err = os.MkdirTemp("", "allot-bench-"); err != nil {
			return nil, fmt.Errorf("store/remote: temporary data directory: %w", err)
		}
		ch.tempDir = true
	}
	ch.cmd = exec.Command(bin, "serve",
		"--data", ch.dataDir,
		"--durability", string(cfg.Durability),
		"--resp", "127.0.0.1:0",
		"--http", "",
		"--connections-max", fmt.Sprint(max(1024, 4*cfg.Workers)))
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
		ch.kill()
		return nil, fmt.Errorf("store/remote: allot serve not ready: %w:\n%s", ctx.Err(), ch.logTail())
	}
}

// readLog keeps the child's last log lines and sends the RESP address once
// the child says it is ready. It drains stderr to the end, so that the
// child never blocks on a full pipe.
func (ch *child) readLog(r io.Reader, ready chan<- string) {
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
		if line == "allot serve: ready" && addr != "" {
			ready <- addr
		}
	}
}

func (ch *child) logTail() string {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return strings.Join(ch.tail, "\n")
}

// stop sends SIGTERM and waits for the child to exit (SIGKILL after
// timeout), then removes a temporary data directory.
func (ch *child) stop(timeout time.Duration) error {
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

func (ch *child) kill() {
	ch.cmd.Process.Kill()
	<-ch.exited
	ch.cleanup()
}

func (ch *child) cleanup() {
	if ch.tempDir {
		os.RemoveAll(ch.dataDir)
		ch.tempDir = false
	}
}
