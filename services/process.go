package services

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// processPollInterval is how often a wait for a process to start answering
// or to exit looks again.
const processPollInterval = 100 * time.Millisecond

// logTailLines is how many lines of a server's log an error quotes.
const logTailLines = 20

// account is the unprivileged user a server runs as when we are root. A nil
// *account means the current user.
type account struct {
	name     string
	uid, gid uint32
}

// lookupAccount returns the account to run a server as: the named system
// user when we are root (PostgreSQL refuses root; MariaDB should not run as
// it), else the current user (nil).
func lookupAccount(name string) (*account, error) {
	if name == "" || os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("services: system user %q (created by the Debian package) not found: %w", name, err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("services: user %q has uid %q: %w", name, u.Uid, err)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("services: user %q has gid %q: %w", name, u.Gid, err)
	}
	return &account{name: name, uid: uint32(uid), gid: uint32(gid)}, nil
}

// command builds a command that runs as a (nil: the current user) in dir,
// in a session of its own so that it outlives us and no terminal signal
// reaches it.
func command(ctx context.Context, a *account, dir string, argv ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	// A command cut short takes the helpers it started with it (initdb's
	// and mariadb-install-db's bootstrap servers would go on writing in a
	// data directory the next start removes). The session is the
	// command's own process group; the servers themselves leave it (they
	// daemonise into a session of their own).
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	if a != nil {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: a.uid, Gid: a.gid, Groups: []uint32{}}
		cmd.Env = append(os.Environ(), "HOME="+dir, "USER="+a.name, "LOGNAME="+a.name)
	}
	return cmd
}

// run runs a command to completion and returns its combined output; a
// failure names the command and quotes what it printed.
func run(ctx context.Context, a *account, dir string, argv ...string) ([]byte, error) {
	cmd := command(ctx, a, dir, argv...)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	if err := cmd.Run(); err != nil {
		return out.Bytes(), fmt.Errorf("%s: %w\n%s", strings.Join(argv, " "), err, tailOf(out.String(), logTailLines))
	}
	return out.Bytes(), nil
}

// startBackground starts argv detached through a shell that puts it in the
// background and exits at once, so the server is re-parented away from us
// (no zombie if it dies while we live) and survives our exit. Output goes
// to logPath, appended. It returns the server's pid.
func startBackground(ctx context.Context, a *account, dir, logPath string, argv ...string) (int, error) {
	sh := []string{"/bin/sh", "-c", `"$@" </dev/null >>"$ALLOT_LOG" 2>&1 & echo $!`, "sh"}
	cmd := command(ctx, a, dir, append(sh, argv...)...)
	cmd.Env = append(cmd.Environ(), "ALLOT_LOG="+logPath)
	out, err := cmd.Output()
	if err != nil {
		return 0, fmt.Errorf("starting %s: %w", argv[0], err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		return 0, fmt.Errorf("starting %s: the shell printed %q, not a pid", argv[0], out)
	}
	return pid, nil
}

// errBadPIDFile marks a pid file that holds no pid.
var errBadPIDFile = errors.New("services: pid file holds no pid")

// readPID reads the pid on the first line of path; 0 when there is no file.
// A file that does not start with a pid is an errBadPIDFile.
func readPID(path string) (int, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("services: reading pid file: %w", err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("%w: %s starts with %q", errBadPIDFile, path, line)
	}
	return pid, nil
}

// alive reports whether pid is a live process (a zombie is not).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name, which is in parentheses and may
	// itself hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return false
	}
	state := b[i+2]
	return state != 'Z' && state != 'X'
}

// identify reports whether pid is our server: alive, running one of the
// binaries exeNames (base names), and working in dir or below it (every
// server here chdirs to its data directory). why says what did not match.
func identify(pid int, exeNames []string, dir string) (ours bool, why string) {
	if !alive(pid) {
		return false, fmt.Sprintf("process %d is not running", pid)
	}
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		return false, fmt.Sprintf("cannot read the binary of process %d: %v", pid, err)
	}
	exe = strings.TrimSuffix(exe, " (deleted)")
	found := false
	for _, n := range exeNames {
		if filepath.Base(exe) == n {
			found = true
		}
	}
	if !found {
		return false, fmt.Sprintf("process %d runs %s, not %s", pid, exe, strings.Join(exeNames, " or "))
	}
	cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
	if err != nil {
		return false, fmt.Sprintf("cannot read the working directory of process %d: %v", pid, err)
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		real = dir
	}
	if cwd != real && !strings.HasPrefix(cwd, real+"/") {
		return false, fmt.Sprintf("process %d works in %s, outside %s", pid, cwd, real)
	}
	return true, ""
}

// stopProcess sends sig to pid and waits until it is gone. After timeout it
// kills it, and says so.
func stopProcess(ctx context.Context, pid int, sig syscall.Signal, timeout time.Duration) error {
	if err := syscall.Kill(pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signalling process %d: %w", pid, err)
	}
	// A stopped process (Pause) would hold sig pending until the timeout
	// and then be killed: continue it so that it shuts down cleanly.
	syscall.Kill(pid, syscall.SIGCONT)
	if waitGone(ctx, pid, timeout) {
		return nil
	}
	if ctx.Err() != nil {
		return fmt.Errorf("waiting for process %d to exit: %w", pid, ctx.Err())
	}
	syscall.Kill(pid, syscall.SIGKILL)
	if waitGone(ctx, pid, 10*time.Second) {
		return fmt.Errorf("process %d did not exit within %v of %v and was killed", pid, timeout, sig)
	}
	return fmt.Errorf("process %d survived %v and SIGKILL", pid, sig)
}

func waitGone(ctx context.Context, pid int, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for alive(pid) {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		time.Sleep(processPollInterval)
	}
	return true
}

// logTail returns the last lines of a log file, or a note that it cannot be
// read.
func logTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	return tailOf(string(b), logTailLines)
}

func tailOf(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// findBinary looks name up in PATH, then in the system directories a
// non-root PATH often lacks.
func findBinary(name string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, d := range []string{"/usr/sbin", "/usr/bin", "/sbin", "/bin"} {
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// canReach reports whether a can walk down to dir: every existing folder on
// the way must let it search (x) as owner, group or other. Folders that do
// not exist yet will be made 0755.
func (a *account) canReach(dir string) bool {
	for d := dir; ; d = filepath.Dir(d) {
		if st, err := os.Stat(d); err == nil {
			sys, ok := st.Sys().(*syscall.Stat_t)
			if !ok {
				return true
			}
			mode := st.Mode().Perm()
			switch {
			case sys.Uid == a.uid:
				if mode&0o100 == 0 {
					return false
				}
			case sys.Gid == a.gid:
				if mode&0o010 == 0 {
					return false
				}
			case mode&0o001 == 0:
				return false
			}
		}
		if d == filepath.Dir(d) {
			return true
		}
	}
}

// fallbackRoot is where servers that run as a system user live when that
// user cannot reach Config.Dir (a checkout under a private home or a 0700
// temporary folder): a folder of /var/tmp named after Config.Dir, so that
// Up, Down and Status of one Config.Dir always agree on it.
func fallbackRoot(dir string) string {
	sum := sha256.Sum256([]byte(dir))
	return filepath.Join("/var/tmp", "allot-services-"+hex.EncodeToString(sum[:6]))
}
