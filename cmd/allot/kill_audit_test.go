package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"allot/bench/kill"
	"allot/server/servertest"
	"allot/store"
	"allot/store/remote"
)

// killAuditAllot runs the kill audit on an allot serve of its own (the
// same server the bench's --kill starts), its Server wrapped by wrap.
func killAuditAllot(t *testing.T, d store.Durability, kills int, wrap func(*allotServer) kill.Server) *kill.Result {
	t.Helper()
	if testing.Short() {
		t.Skip("starts allot serve and crashes it")
	}
	if os.Getenv("ALLOT_BIN") == "" {
		t.Setenv("ALLOT_BIN", servertest.BuildAllot(t))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const workers = 8
	srv, err := startAllotForKill(ctx, d, workers)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.close)
	res := kill.Run(ctx, kill.Config{
		Store: "allot", Durability: d, Kills: kills, Workers: workers, Seed: 11, OpsMax: 200_000,
		KillAfterMin: 200 * time.Millisecond, KillAfterMax: 400 * time.Millisecond,
		Server: wrap(srv), Log: testLog{t},
		Open: func(ctx context.Context) (store.Store, error) {
			return remote.Open(ctx, store.Config{Addr: srv.addr, Durability: d, Workers: workers, Timeout: 30 * time.Second}, remote.Options{})
		},
	})
	if res.Error != "" || res.Kills != kills || res.Acked == 0 {
		t.Fatalf("the audit did not run: %+v", res)
	}
	return res
}

// The real server in its default mode keeps every acknowledged op across
// SIGKILLs, and every kill lands under load: ops were in flight.
func TestKillAuditOfAllotServePasses(t *testing.T) {
	res := killAuditAllot(t, store.DurabilityFsync, 2, func(s *allotServer) kill.Server { return s })
	if res.Failed() || res.LostAcked != 0 || res.RowsMissing != 0 || res.InFlight == 0 || res.KilledEarly != 0 {
		t.Fatalf("allot serve, fsync: verdict %q: %+v", res.Verdict(), res)
	}
}

// rollbackServer is allot serve made to lose acknowledged ops, as a store
// that acknowledges before its write is durable does when the data is
// lost: Kill freezes the server, copies its data directory (what a crash
// at that instant would leave), lets it go on acknowledging ops under load
// for a while, kills it, and puts the frozen copy back.
type rollbackServer struct {
	*allotServer
	acking time.Duration
}

func (s rollbackServer) Kill(ctx context.Context) error {
	pid := s.proc.PID()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		return err
	}
	frozen := s.dataDir + ".frozen"
	err := copyTree(s.dataDir, frozen)
	syscall.Kill(pid, syscall.SIGCONT)
	if err != nil {
		return err
	}
	time.Sleep(s.acking)
	if err := s.allotServer.Kill(ctx); err != nil {
		return err
	}
	if err := os.RemoveAll(s.dataDir); err != nil {
		return err
	}
	return os.Rename(frozen, s.dataDir)
}

func copyTree(from, to string) error {
	return filepath.WalkDir(from, func(path string, e os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		dst := filepath.Join(to, rel)
		if e.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		src, err := os.Open(path)
		if err != nil {
			return err
		}
		defer src.Close()
		out, err := os.Create(dst)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, src); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
}

// The audit's power on the real path (allot serve, the Go client, the
// restart, the read-back): a server that loses ops it acknowledged fails
// it, and the table says so.
func TestKillAuditCatchesAllotServeLosingAckedOps(t *testing.T) {
	res := killAuditAllot(t, store.DurabilityWrite, 1, func(s *allotServer) kill.Server {
		return rollbackServer{allotServer: s, acking: 300 * time.Millisecond}
	})
	if res.LostAcked == 0 || !res.Failed() || !strings.HasPrefix(res.Verdict(), "FAILED") {
		t.Fatalf("a server that lost 300 ms of acknowledged ops passed: verdict %q: %+v", res.Verdict(), res)
	}
}

// --ops sets the ops of a round of the kill audit, as the table's advice
// for a round killed after its last op says: ignored, that advice could
// not be followed. 40 ops are sent long before the kill, so the audit
// ran without load and must say so (and not pass).
func TestBenchKillTakesOpsPerRound(t *testing.T) {
	if testing.Short() {
		t.Skip("starts allot serve and crashes it")
	}
	if os.Getenv("ALLOT_BIN") == "" {
		t.Setenv("ALLOT_BIN", servertest.BuildAllot(t))
	}
	code, out, errOut := runCmd(t, "bench", "--kill", "1", "--stores", "allot", "--durability", "write", "--ops", "40", "--workers", "4", "--quiet")
	if code == 0 || !strings.Contains(out, "NOT UNDER LOAD") {
		t.Fatalf("exit %d:\n%s%s", code, out, errOut)
	}
}

// --kill crashes a server it starts itself; given --addr, it must refuse
// (as it does for the peers and the cluster) rather than audit another
// server than the one named and print that verdict under its name.
func TestBenchKillRefusesAddrForAllot(t *testing.T) {
	if testing.Short() {
		t.Skip("would start allot serve and crash it")
	}
	if os.Getenv("ALLOT_BIN") == "" {
		t.Setenv("ALLOT_BIN", servertest.BuildAllot(t))
	}
	for _, name := range []string{"allot", "allot-mux"} {
		code, out, errOut := runCmd(t, "bench", "--kill", "1", "--stores", name, "--durability", "write", "--addr", "127.0.0.1:1", "--quiet")
		if code == 0 || !strings.Contains(out+errOut, "cannot with --addr") {
			t.Errorf("%s with --addr: exit %d:\n%s%s", name, code, out, errOut)
		}
	}
}

// A server that died by itself during a round (a panic, the OOM killer)
// is a finding, not a kill: the audit must say so instead of taking the
// corpse for the crash it meant to cause and judging the round as usual.
func TestKillOfAllotServeThatDiedByItselfIsAnError(t *testing.T) {
	if testing.Short() {
		t.Skip("starts allot serve")
	}
	if os.Getenv("ALLOT_BIN") == "" {
		t.Setenv("ALLOT_BIN", servertest.BuildAllot(t))
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, err := startAllotForKill(ctx, store.DurabilityWrite, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.close)
	pid := srv.proc.PID()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); processRunning(pid); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("pid %d survived SIGKILL", pid)
		}
	}
	if err := srv.Kill(ctx); err == nil {
		t.Fatal("the kill of a server that had already exited reported success")
	}
}
