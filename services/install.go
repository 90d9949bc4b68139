package services

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// policyRCPath is Debian's hook that invoke-rc.d asks before starting a
// service from a package's install script; exit code 101 means "do not".
const policyRCPath = "/usr/sbin/policy-rc.d"

// aptLockWait bounds how long an apt-get that failed on a lock another
// process holds is tried again, aptLockRetryInterval how often. apt-get's
// DPkg::Lock::Timeout waits for dpkg's locks only: `apt-get update` fails at
// once on the lists lock (apt 2.6: "Could not get lock
// /var/lib/apt/lists/lock"), which a freshly booted machine's apt-daily or
// cloud-init holds while it updates, and an install on the archives lock a
// download holds.
const (
	aptLockWait          = 5 * time.Minute
	aptLockRetryInterval = 2 * time.Second
)

// aptInterruptWait bounds how long an interrupted apt-get may take to
// finish the dpkg run it is in before it is killed (a variable for tests).
var aptInterruptWait = 5 * time.Minute

// ensureInstalled installs the Debian packages of every server in list that
// is missing, and returns why any is still missing (nil: all installed).
func ensureInstalled(ctx context.Context, cfg *Config, list []server) error {
	why := installMissing(ctx, cfg, list)
	var errs []error
	for _, s := range list {
		if err := why[s.name()]; err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// installMissing installs the Debian packages of every server in list that
// is missing, and returns, by server name, why a server's packages are
// still missing (none: every server is installed). Only root can install;
// anyone else gets an error naming the packages. Installs are serialised
// across processes by one machine-wide lock file (not one per Config.Dir:
// two directories' tests install at once too), so that a second apt-get
// does not fail on apt's own locks. apt installs all or nothing: when the
// install of every missing package fails, each server's packages are
// installed apart, so that one package no source has (a server a Debian
// release dropped) keeps only its own server from starting.
func installMissing(ctx context.Context, cfg *Config, list []server) map[string]error {
	todo := notInstalled(list)
	if len(todo) == 0 {
		return nil
	}
	why := map[string]error{}
	all := func(err error) map[string]error {
		for _, s := range todo {
			why[s.name()] = err
		}
		return why
	}
	if os.Geteuid() != 0 {
		for _, s := range todo {
			why[s.name()] = fmt.Errorf("services: %s: not installed: %s; run allot as root to install them, or install them yourself: apt-get install -y %s",
				s.name(), strings.Join(s.packages(), ", "), strings.Join(s.packages(), " "))
		}
		return why
	}
	lock, err := lockFile(ctx, filepath.Join(os.TempDir(), "allot-services-install.lock"))
	if err != nil {
		return all(err)
	}
	defer lock.unlock()
	// Another process may have installed them while we waited.
	if todo = notInstalled(list); len(todo) == 0 {
		return nil
	}
	var missing []string
	for _, s := range todo {
		missing = append(missing, s.packages()...)
	}
	fmt.Fprintf(cfg.Log, "installing %s (apt-get)\n", strings.Join(missing, " "))

	// Debian's packages start their default instances on the standard
	// ports from their install scripts. Forbid that while we install.
	restore, err := forbidServiceStarts(policyRCPath)
	if err != nil {
		return all(err)
	}
	defer restore()
	if err := aptInstall(ctx, cfg.Log, missing); err != nil {
		if len(todo) < 2 || ctx.Err() != nil {
			return all(err)
		}
		fmt.Fprintf(cfg.Log, "apt-get could not install them together; installing each server's packages apart\n")
		why = installApart(ctx, cfg.Log, todo)
	}
	for _, s := range todo {
		if !s.installed() && why[s.name()] == nil {
			why[s.name()] = fmt.Errorf("services: %s: apt-get installed %s but its binaries are still not found", s.name(), strings.Join(s.packages(), ", "))
		}
	}
	return why
}

// installApart installs each server's packages with an apt-get of its
// own, in order, and returns, by server name, why each that failed did.
func installApart(ctx context.Context, log io.Writer, servers []server) map[string]error {
	why := map[string]error{}
	for _, s := range servers {
		if err := aptGet(ctx, log, append([]string{"install", "--no-install-recommends"}, s.packages()...)...); err != nil {
			why[s.name()] = err
		}
	}
	return why
}

// policyRC is the policy-rc.d that forbidServiceStarts writes.
const policyRC = "#!/bin/sh\n# written by allot services while installing packages\nexit 101\n"

// forbidServiceStarts puts a policy-rc.d that forbids every start at path
// and returns what removes it. A policy the machine has is left alone (and
// kept). One that is ours, left by an up killed while it installed, is
// taken as ours and removed after this install: left in place, it would
// have kept every later package install on the machine from starting its
// service, forever.
func forbidServiceStarts(path string) (restore func(), err error) {
	b, err := os.ReadFile(path)
	switch {
	case err == nil && string(b) != policyRC:
		return func() {}, nil
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("services: reading %s: %w", path, err)
	case err != nil:
		if err := os.WriteFile(path, []byte(policyRC), 0o755); err != nil {
			return nil, fmt.Errorf("services: writing %s to keep package installs from starting servers: %w", path, err)
		}
	}
	return func() { os.Remove(path) }, nil
}

// notInstalled lists the servers of list whose binaries are not there.
func notInstalled(list []server) []server {
	var todo []server
	for _, s := range list {
		if !s.installed() {
			todo = append(todo, s)
		}
	}
	return todo
}

// aptInstall updates apt's package lists and installs pkgs. A failed
// update does not stop the install: apt fails an update for one broken
// source (a third party's repository without a Release file, or whose key
// expired) though every other source updated. The failure is logged, the
// install reads the lists apt has, and if it fails as well its error
// names both.
func aptInstall(ctx context.Context, log io.Writer, pkgs []string) error {
	uerr := aptGet(ctx, log, "update")
	if uerr != nil {
		if ctx.Err() != nil {
			return uerr
		}
		fmt.Fprintf(log, "warning: %v\ninstalling from the package lists apt has\n", uerr)
	}
	err := aptGet(ctx, log, append([]string{"install", "--no-install-recommends"}, pkgs...)...)
	if err != nil && uerr != nil {
		return fmt.Errorf("%w\n(the package lists were not updated: %v)", err, uerr)
	}
	return err
}

// aptOptions are more options for every apt-get run (tests: private lists
// and sources); none in use.
var aptOptions []string

// aptGet runs apt-get non-interactively with args, and runs it again while
// it fails on a lock another apt holds (aptLockWait at most). Each try
// that failed so is logged.
func aptGet(ctx context.Context, log io.Writer, args ...string) error {
	argv := append(append([]string{"apt-get", "-q", "-y", "-o", "DPkg::Lock::Timeout=300"}, aptOptions...), args...)
	deadline := time.Now().Add(aptLockWait)
	for {
		out, err := runApt(ctx, argv...)
		if err == nil {
			return nil
		}
		err = fmt.Errorf("services: %s: %w\n%s", strings.Join(argv, " "), err, tailOf(string(out), logTailLines))
		if ctx.Err() != nil || !aptLockBusy(out) || !time.Now().Before(deadline) {
			return err
		}
		fmt.Fprintf(log, "apt-get %s: a lock of apt's is held by another process; trying again in %v\n", strings.Join(args, " "), aptLockRetryInterval)
		select {
		case <-ctx.Done():
			return err
		case <-time.After(aptLockRetryInterval):
		}
	}
}

// aptLockBusy reports whether apt-get's output says it could not take one
// of apt's or dpkg's locks because another process holds it.
func aptLockBusy(out []byte) bool {
	return bytes.Contains(out, []byte("Could not get lock"))
}

// runApt runs argv (apt-get, or dpkg) to completion with the output
// combined, in a session of its own (command), with
// DEBIAN_FRONTEND=noninteractive and the C locale (LC_ALL=C, LANGUAGE
// empty: apt's messages in English, which aptLockBusy reads). ctx ending
// interrupts it with SIGINT and waits for it to exit (killing it only
// after aptInterruptWait):
// apt-get then stops downloading, or lets the dpkg run it is in finish,
// while a SIGKILL in the middle of dpkg leaves the machine's package
// database half-written ("dpkg was interrupted, you must manually run
// 'dpkg --configure -a'"), and every later install failing on it.
func runApt(ctx context.Context, argv ...string) ([]byte, error) {
	cmd := command(ctx, nil, "/", argv...)
	// apt speaks the C locale's English: aptLockBusy reads its message
	// (the last value of a name in Env wins).
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive", "LC_ALL=C", "LANGUAGE=")
	// Not command's SIGKILL of the whole group: SIGINT to apt-get alone.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGINT) }
	// After the SIGINT, Wait waits for the exit, up to aptInterruptWait:
	// an apt-get (or a package's maintainer script) that hangs on is then
	// killed, rather than holding `services up` for ever.
	cmd.WaitDelay = aptInterruptWait
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		return out, fmt.Errorf("interrupted (%w): apt-get was sent SIGINT and waited for, so that no dpkg run was cut off: %v", ctx.Err(), err)
	}
	return out, err
}

// writeShared writes a file services makes for a server (its
// configuration, its start script, a pid file), mode 0644 whatever the
// process's umask, and sets that mode on a file an earlier start left: a
// server may read it as its own user (PostgreSQL and MariaDB do), and
// root's umask of 077 made it unreadable there.
func writeShared(path string, data []byte) error {
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return err
	}
	return os.Chmod(path, 0o644)
}

// mkdirShared creates dir and its missing parents, each mode 0755 whatever
// the process's umask (os.MkdirAll's mode passes through it): a server
// running as its own user must reach its folder through them. Directories
// that exist keep their mode.
func mkdirShared(dir string) error {
	dir = filepath.Clean(dir)
	if st, err := os.Stat(dir); err == nil {
		if !st.IsDir() {
			return &os.PathError{Op: "mkdir", Path: dir, Err: syscall.ENOTDIR}
		}
		return nil
	}
	if parent := filepath.Dir(dir); parent != dir {
		if err := mkdirShared(parent); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		if errors.Is(err, os.ErrExist) {
			// Made by another process meanwhile: its mode is its own.
			return nil
		}
		return err
	}
	return os.Chmod(dir, 0o755)
}
