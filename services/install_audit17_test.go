package services

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// signalWriter closes seen the first time a write contains want.
type signalWriter struct {
	want string
	once sync.Once
	seen chan struct{}
}

func (w *signalWriter) Write(p []byte) (int, error) {
	if strings.Contains(string(p), w.want) {
		w.once.Do(func() { close(w.seen) })
	}
	return len(p), nil
}

// TestAudit17AptUpdateWaitsForTheListsLock: `apt-get update` fails at once
// on the lists lock another apt holds (DPkg::Lock::Timeout covers dpkg's
// locks only), as apt-daily's update holds it on a freshly booted machine:
// the install of a first `services up` failed. aptGet tries again until the
// lock is free. The update runs on a private lists and cache folder with
// no sources, so it touches nothing of the machine's apt and needs no
// network; the test holds that folder's lock as apt does (fcntl).
func TestAudit17AptUpdateWaitsForTheListsLock(t *testing.T) {
	dir, opts := privateApt(t, "")
	lock, err := os.OpenFile(filepath.Join(dir, "lists", "lock"), os.O_RDWR|os.O_CREATE, 0o640)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.FcntlFlock(lock.Fd(), syscall.F_SETLK, &syscall.Flock_t{Type: syscall.F_WRLCK}); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	log := &signalWriter{want: "trying again", seen: make(chan struct{})}
	done := make(chan error, 1)
	go func() {
		done <- aptGet(ctx, log, append(opts, "update")...)
	}()
	select {
	case err := <-done:
		t.Fatalf("apt-get update returned while another process held the lists lock: %v", err)
	case <-log.seen:
	}
	// Release the lock, as the other apt would when its update is done.
	lock.Close()
	if err := <-done; err != nil {
		t.Fatalf("apt-get update once the lock was free: %v", err)
	}
}

// TestAudit17AptInterruptedIsNotKilled: an up cancelled while apt-get
// installs (Ctrl-C, servicestest's deadline) SIGKILLed apt-get and dpkg
// with it, leaving the machine's package database half-written ("dpkg was
// interrupted, you must manually run 'dpkg --configure -a'") and every
// later up failing on it. runApt sends SIGINT, which apt-get handles by
// stopping after the dpkg run it is in, and waits for it to exit. A shell
// stands in for apt-get: it says how it ended.
func TestAudit17AptInterruptedIsNotKilled(t *testing.T) {
	dir := t.TempDir()
	cancel, done := startAptStandIn(t, dir, `trap 'echo interrupted > "$1/ended"; exit 130' INT`)
	cancel()
	var err error
	select {
	case err = <-done:
	case <-time.After(time.Minute):
		t.Fatal("runApt did not return within a minute of its context ending")
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want one that says the context was cancelled", err)
	}
	b, rerr := os.ReadFile(filepath.Join(dir, "ended"))
	if rerr != nil || strings.TrimSpace(string(b)) != "interrupted" {
		t.Fatalf("the stand-in was not interrupted with SIGINT and let exit (killed instead?): %v %q; runApt: %v", rerr, b, err)
	}
}

// TestAudit17BuildSaysWhyTheDownloadFailed: when the module proxy cannot
// serve the pinned module (no network on a fresh machine, a proxy that
// refuses it, GOPROXY=off), go mod download -json says why on stdout and
// nothing on stderr: the error quoted an empty stderr and read only "exit
// status 1". It names the reason now. GOPROXY=off makes the failure
// without the network; the version is one no build here uses, so it is
// not in the module cache.
func TestAudit17BuildSaysWhyTheDownloadFailed(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	t.Setenv("GOPROXY", "off")
	bin := filepath.Join(t.TempDir(), "bin", "nats-server")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, err := buildGoModule(ctx, io.Discard, "nats", "github.com/nats-io/nats-server/v2", "v2.10.0", bin, nil)
	if err == nil {
		t.Fatal("the build succeeded with GOPROXY=off and a version not in the module cache")
	}
	if !strings.Contains(err.Error(), "GOPROXY=off") {
		t.Fatalf("the error does not say why the download failed: %v", err)
	}
	if _, serr := os.Stat(bin); serr == nil {
		t.Fatalf("a failed build left %s", bin)
	}
}

// TestAudit17LeftoverPolicyIsRemoved: an up killed while it installed
// (SIGKILL, a CI job's timeout) left its policy-rc.d behind, and the next
// install took it for the machine's own and kept it: no package installed
// on the machine after that ever started its service. A policy of the
// machine's is still left alone.
func TestAudit17LeftoverPolicyIsRemoved(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "policy-rc.d")

	restore, err := forbidServiceStarts(path)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != policyRC {
		t.Fatalf("no policy written: %v %q", err, b)
	}
	if out, err := exec.Command(path).CombinedOutput(); err == nil || err.(*exec.ExitError).ExitCode() != 101 {
		t.Fatalf("the policy should exit 101 (forbid): %v %s", err, out)
	}
	restore()
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the policy is still there after the install: %v", err)
	}

	// Ours, left by a killed up.
	if err := os.WriteFile(path, []byte(policyRC), 0o755); err != nil {
		t.Fatal(err)
	}
	restore, err = forbidServiceStarts(path)
	if err != nil {
		t.Fatal(err)
	}
	restore()
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the policy a killed up left is still there after the next install: %v", err)
	}

	// The machine's.
	machines := "#!/bin/sh\nexit 101\n"
	if err := os.WriteFile(path, []byte(machines), 0o755); err != nil {
		t.Fatal(err)
	}
	restore, err = forbidServiceStarts(path)
	if err != nil {
		t.Fatal(err)
	}
	restore()
	if b, err := os.ReadFile(path); err != nil || string(b) != machines {
		t.Fatalf("the machine's policy was changed: %v %q", err, b)
	}
}

// An interrupted apt-get that does not end (a maintainer script that
// hangs, or one that ignores SIGINT) is killed once aptInterruptWait has
// passed: runApt waited for it for ever, and `services up` with it.
func TestAudit17AptHangingAfterInterruptIsKilled(t *testing.T) {
	saved := aptInterruptWait
	aptInterruptWait = 500 * time.Millisecond
	t.Cleanup(func() { aptInterruptWait = saved })
	cancel, done := startAptStandIn(t, t.TempDir(), `trap '' INT`)
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("error %v, want one that says the context was cancelled", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("runApt still waits a minute after its context ended, for an apt-get that ignores SIGINT")
	}
}

// startAptStandIn runs a shell standing in for apt-get under runApt: trap
// (its signal handling), then it says it started and loops. It returns
// what cancels runApt's context and where runApt's error comes, once the
// stand-in has started.
func startAptStandIn(t *testing.T, dir, trap string) (context.CancelFunc, <-chan error) {
	t.Helper()
	script := trap + "\necho > \"$1/started\"\nwhile :; do sleep 0.05; done"
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	done := make(chan error, 1)
	go func() {
		_, err := runApt(ctx, "/bin/sh", "-c", script, "sh", dir)
		done <- err
	}()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(dir, "started")); err == nil {
			return cancel, done
		}
		select {
		case err := <-done:
			t.Fatalf("the stand-in ended before it was interrupted: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the stand-in did not start within a minute")
		}
	}
}
