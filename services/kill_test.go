package services

import (
	"context"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestDescendantsFindsEveryProcessBelow(t *testing.T) {
	cmd := exec.Command("/bin/sh", "-c", "sleep 30 & sleep 30 & wait")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, p := range descendants(cmd.Process.Pid) {
			syscall.Kill(p, syscall.SIGKILL)
		}
		cmd.Process.Kill()
		cmd.Wait()
	}()
	deadline := time.Now().Add(5 * time.Second)
	for len(descendants(cmd.Process.Pid)) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("descendants of the shell: %v, want its two sleeps", descendants(cmd.Process.Pid))
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, p := range descendants(cmd.Process.Pid) {
		if parentPID(p) != cmd.Process.Pid {
			t.Fatalf("process %d has parent %d, not the shell %d", p, parentPID(p), cmd.Process.Pid)
		}
	}
}

// Kill (and Pause, Resume) names the folder it looked in, and signals
// nothing when its server there is not running: it must never reach a
// server of another Config.
func TestKillOnlyLooksInItsOwnFolder(t *testing.T) {
	dir := t.TempDir()
	cfg := WithPortOffset(Config{Dir: dir}, 3000)
	_, err := Kill(context.Background(), cfg, Redis)
	if err == nil || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "not running") {
		t.Fatalf("Kill of a server never started: %v", err)
	}
	for name, f := range map[string]func(context.Context, Config, string) (int, error){"Pause": Pause, "Resume": Resume} {
		if _, err := f(context.Background(), cfg, Redis); err == nil || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "not running") {
			t.Fatalf("%s of a server never started: %v", name, err)
		}
	}
	if addr, err := Addr(cfg, Redis); err != nil || addr != "127.0.0.1:19379" {
		t.Fatalf("Addr = %q, %v", addr, err)
	}
	if _, err := Addr(cfg, "nosuch"); err == nil {
		t.Fatal("Addr of an unknown server: no error")
	}
}
