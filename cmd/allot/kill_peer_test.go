package main

import (
	"context"
	"os"
	"testing"
	"time"

	"allot/bench/kill"
	"allot/services"
	"allot/store"
)

// peerTestPortOffset puts this test's private Redis on a port of its own
// (16379+2600), off the shared servers', the audit's and other tests'.
const peerTestPortOffset = 2600

// runningPID is the pid of the named server of cfg, 0 when it is not
// running.
func runningPID(t *testing.T, cfg services.Config, name string) int {
	t.Helper()
	st, err := services.Status(context.Background(), cfg, name)
	if err != nil {
		t.Fatal(err)
	}
	if len(st) != 1 || st[0].State != services.StateRunning {
		return 0
	}
	return st[0].PID
}

// The audit of a peer crashes the server it started in its own folder (the
// same peerServer and services.Kill as bench --kill), every round, under
// load, and restarts it on the same data; the shared server of the same
// kind is never touched.
func TestKillAuditOfAPeerCrashesOnlyItsOwnServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Redis server and crashes it")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	shared := runningPID(t, services.Config{}, services.Redis)
	up := services.WithPortOffset(services.Config{Dir: t.TempDir(), Durability: store.DurabilityWrite, Timeout: 2 * time.Minute}, peerTestPortOffset)
	t.Cleanup(func() {
		if err := services.Down(context.Background(), up, services.Redis); err != nil {
			t.Errorf("stopping the private Redis: %v", err)
		}
	})
	if err := services.Up(ctx, up, services.Redis); err != nil {
		if os.Getenv("CI") != "true" {
			t.Skipf("no private Redis (CI=true makes this a failure): %v", err)
		}
		t.Fatal(err)
	}
	addr, err := services.Addr(up, services.Redis)
	if err != nil {
		t.Fatal(err)
	}
	server := &pidTracker{Server: peerServer{name: services.Redis, up: up}, t: t, up: up}
	server.pids = append(server.pids, runningPID(t, up, services.Redis))
	res := kill.Run(ctx, kill.Config{
		Store: "redis", Durability: store.DurabilityWrite, Kills: 2, Workers: 8, Seed: 3, OpsMax: 200_000,
		KillAfterMin: 200 * time.Millisecond, KillAfterMax: 400 * time.Millisecond,
		Server: server, Log: testLog{t},
		Open: func(ctx context.Context) (store.Store, error) {
			return store.Open(ctx, "redis", store.Config{Addr: addr, Durability: store.DurabilityWrite, Workers: 8, Timeout: 30 * time.Second})
		},
	})
	if res.Failed() || res.Kills != 2 || res.Acked == 0 || res.InFlight == 0 || res.LostAcked != 0 {
		t.Fatalf("Redis, appendfsync no, killed twice: verdict %q: %+v", res.Verdict(), res)
	}
	for i := 1; i < len(server.pids); i++ {
		if server.pids[i] == 0 || server.pids[i] == server.pids[i-1] {
			t.Fatalf("the private Redis's pids across the rounds: %v: not a new process after each kill", server.pids)
		}
	}
	if len(server.pids) != 3 {
		t.Fatalf("pids %v: want the first and one per restart", server.pids)
	}
	if now := runningPID(t, services.Config{}, services.Redis); now != shared {
		t.Fatalf("the shared Redis was pid %d before the audit, %d after", shared, now)
	}
}

// pidTracker records the pid of the server after each start, and checks
// that the process Kill named is gone.
type pidTracker struct {
	kill.Server
	t    *testing.T
	up   services.Config
	pids []int
}

func (p *pidTracker) Kill(ctx context.Context) error {
	before := p.pids[len(p.pids)-1]
	if err := p.Server.Kill(ctx); err != nil {
		return err
	}
	if processRunning(before) {
		p.t.Errorf("process %d still runs after the kill", before)
	}
	return nil
}

func (p *pidTracker) Start(ctx context.Context) error {
	if err := p.Server.Start(ctx); err != nil {
		return err
	}
	p.pids = append(p.pids, runningPID(p.t, p.up, services.Redis))
	return nil
}
