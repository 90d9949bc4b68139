package services

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// killWait bounds the wait for a killed server's processes to be gone.
// reapWait bounds the wait, for all of them together, for the zombies
// they leave to be reaped by their parent (init, for a server started
// detached): an init that reaps does so within milliseconds, and one that
// does not (a container's) never will, so a long wait, let alone one per
// process (10 s each, before), buys nothing.
const (
	killWait = 30 * time.Second
	reapWait = 200 * time.Millisecond
)

// Kill crashes the named server that Up started from cfg.Dir: it stops the
// server's process and every process below it (PostgreSQL's backends, a
// Redis rewrite child) with SIGSTOP, so that none of them can write another
// byte, then sends them all SIGKILL, and returns once they are gone. What
// the data directory then holds is what a crash of the server leaves; Up
// starts it again on the same data. It returns the pid it killed.
//
// A server that is not running, or a pid file naming a process that is not
// ours, is an error: Kill never signals a process this package did not
// start.
func Kill(ctx context.Context, cfg Config, name string) (int, error) {
	return running(ctx, cfg, name, "kill", func(pid int) error {
		tree := append([]int{pid}, descendants(pid)...)
		for _, p := range tree {
			syscall.Kill(p, syscall.SIGSTOP)
		}
		// A child forked between the listing and the stop is found now.
		for _, p := range descendants(pid) {
			if !containsPID(tree, p) {
				syscall.Kill(p, syscall.SIGSTOP)
				tree = append(tree, p)
			}
		}
		for _, p := range tree {
			syscall.Kill(p, syscall.SIGKILL)
		}
		for _, p := range tree {
			if !waitGone(ctx, p, killWait) {
				return fmt.Errorf("services: %s: process %d survived SIGKILL for %v", name, p, killWait)
			}
		}
		// A zombie still answers kill(pid, 0), and PostgreSQL refuses to
		// start while the pid in its lock file does: reap our own, and
		// give whoever reaps orphans here a moment to do it. (Up clears
		// lock files naming a dead process, zombie or not, before it
		// starts a server: removeStaleLocks.)
		waitReaped(ctx, tree, reapWait)
		return nil
	})
}

// running runs f with the pid of the named server that Up started from
// cfg.Dir, under the server's lock, and returns that pid. A server that
// is not running, or a pid file naming a process that is not ours, is an
// error naming what it would have done.
func running(ctx context.Context, cfg Config, name, what string, f func(pid int) error) (int, error) {
	if err := cfg.Validate(); err != nil {
		return 0, err
	}
	s, err := serverByName(name)
	if err != nil {
		return 0, err
	}
	var done int
	err = locked(ctx, &cfg, s, func(in *instance) error {
		pid, why, err := in.pid()
		if err != nil {
			return err
		}
		if pid == 0 {
			if why == "" {
				why = "no pid file"
			}
			return fmt.Errorf("services: %s in %s is not running (%s): nothing to %s", name, in.dir, why, what)
		}
		if err := f(pid); err != nil {
			return err
		}
		done = pid
		return nil
	})
	return done, err
}

// waitReaped waits until none of pids, all dead, has a /proc entry (not
// even a zombie), at most timeout for them all. A zombie that is our own
// child is reaped here, since nobody else would: the servers are started
// detached and are never ours, but a caller's stand-in may be (a caller
// that then waits for it gets ECHILD).
func waitReaped(ctx context.Context, pids []int, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	left := slices.Clone(pids)
	for {
		left = slices.DeleteFunc(left, reaped)
		if len(left) == 0 || !time.Now().Before(deadline) || ctx.Err() != nil {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// reaped reports whether the dead process pid has no /proc entry left,
// reaping it first when it is a zombie child of ours.
func reaped(pid int) bool {
	if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err != nil {
		return true
	}
	var status syscall.WaitStatus
	p, err := syscall.Wait4(pid, &status, syscall.WNOHANG, nil)
	return err == nil && p == pid
}

func containsPID(list []int, pid int) bool {
	for _, p := range list {
		if p == pid {
			return true
		}
	}
	return false
}

// descendants lists every live process below pid, from /proc.
func descendants(pid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if pp := parentPID(p); pp > 0 {
			children[pp] = append(children[pp], p)
		}
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// parentPID reads the fourth field of /proc/<pid>/stat (after the command
// name in parentheses, which may hold spaces); 0 when unreadable.
func parentPID(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0
	}
	pp, _ := strconv.Atoi(f[1])
	return pp
}

// WithPortOffset returns cfg with every server's port moved by offset, so
// that private servers (in another Config.Dir) can run beside the shared
// ones: the kill audit crashes servers of its own, never those other runs
// are using.
func WithPortOffset(cfg Config, offset int) Config {
	cfg.portOffset = offset
	return cfg
}

// Addr returns the loopback host:port the named server of cfg listens on.
func Addr(cfg Config, name string) (string, error) {
	s, err := serverByName(name)
	if err != nil {
		return "", err
	}
	return "127.0.0.1:" + strconv.Itoa(s.basePort()+cfg.portOffset), nil
}

// Pause stops the named server that Up started from cfg.Dir with SIGSTOP,
// as a machine that hangs (or a network that partitions it) would: its
// sockets stay open and nothing answers on them. Resume continues it. It
// returns the pid it stopped; the same refusals as Kill.
func Pause(ctx context.Context, cfg Config, name string) (int, error) {
	return signalServer(ctx, cfg, name, syscall.SIGSTOP)
}

// Resume continues a server Pause stopped.
func Resume(ctx context.Context, cfg Config, name string) (int, error) {
	return signalServer(ctx, cfg, name, syscall.SIGCONT)
}

// signalServer sends sig to the named server's process.
func signalServer(ctx context.Context, cfg Config, name string, sig syscall.Signal) (int, error) {
	return running(ctx, cfg, name, "signal", func(pid int) error {
		if err := syscall.Kill(pid, sig); err != nil {
			return fmt.Errorf("services: %s: signal %v to %d: %w", name, sig, pid, err)
		}
		return nil
	})
}
