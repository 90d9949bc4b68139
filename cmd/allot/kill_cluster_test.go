package main

import (
	"context"
	"os"
	"testing"
	"time"

	"allot/bench/kill"
	"allot/cluster"
	"allot/server/servertest"
	"allot/services"
	"allot/store"
)

// auditCluster runs the kill audit on a fresh private shard whose nodes get
// env, killing what faults name; with rejoin it then checks the last
// round's victim rejoined.
func auditCluster(t *testing.T, kills int, faults []string, rejoin bool, env ...string) *kill.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := privateCluster(ctx, t, faults, env...)
	res := kill.Run(ctx, kill.Config{
		Store: "allot-cluster", Durability: store.DurabilityFsync, Kills: kills, Workers: 8, Seed: 5,
		// The kill within 250-700 ms of a round's first op, with ops for
		// far longer: up to 8,000 ops a second are acknowledged here, and
		// a round whose workers sent every op before the kill tests
		// nothing (with 20,000 ops and the default window of up to 1.5 s,
		// a machine four times as fast would have).
		OpsMax: 80000, KillAfterMin: 250 * time.Millisecond, KillAfterMax: 700 * time.Millisecond,
		Server: c, Log: testLog{t},
		Open: func(ctx context.Context) (store.Store, error) { return c.open(ctx, 8, 30*time.Second) },
	})
	if res.Error == "" && rejoin {
		// The last round's victim rejoined too.
		if _, err := c.ready(ctx, true); err != nil {
			res.Error = "after the audit: " + err.Error()
		}
	}
	t.Logf("%d kills, %d acknowledged, %d in flight, %d acknowledged lost, %d applied unacknowledged, error %q",
		res.Kills, res.Acked, res.InFlight, res.LostAcked, res.AppliedUnacked, res.Error)
	return res
}

// The audit of a replicated shard: SIGKILL of the primary, of a standby,
// of a NATS node, SIGSTOP of the primary and of a NATS node (each resumed
// once a primary takes writes again); every acknowledged op is in the
// primary afterwards, and every node rejoins.
func TestClusterKillAudit(t *testing.T) {
	kills := len(clusterFaults)
	res := auditCluster(t, kills, clusterFaults, true)
	if res.Error != "" || res.Failed() || res.Kills != kills || res.LostAcked != 0 || res.Acked == 0 || res.KilledEarly != 0 {
		t.Fatalf("the audit of a correct shard failed: %+v", res)
	}
}

// A primary that acknowledges a frame before JetStream has it loses
// acknowledged ops when it is killed: the audit must see it.
func TestClusterKillAuditCatchesAckBeforeAppend(t *testing.T) {
	res := auditCluster(t, 1, []string{faultKillPrimary}, false, "ALLOT_CLUSTER_FAULT="+cluster.FaultAckBeforeAppend)
	if res.LostAcked == 0 || !res.Failed() || res.KilledEarly != 0 {
		t.Fatalf("a shard acknowledging before the append passed the audit: %+v", res)
	}
}

// privateCluster starts a fresh shard of three nodes on the private NATS
// cluster of the kill audit (stopped when the test ends), or skips the test
// when it cannot (but fails it in CI).
func privateCluster(ctx context.Context, t *testing.T, faults []string, env ...string) *clusterServer {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a NATS cluster and three allot nodes")
	}
	if os.Getenv("ALLOT_BIN") == "" {
		t.Setenv("ALLOT_BIN", servertest.BuildAllot(t))
	}
	t.Cleanup(func() {
		if up, err := killServices(""); err == nil {
			services.Down(context.Background(), up, services.NATS)
		}
	})
	c, err := startCluster(ctx, store.DurabilityFsync, faults, 3, testLog{t}, env...)
	if err != nil {
		if os.Getenv("CI") != "true" {
			t.Skipf("the cluster could not be brought up (CI=true makes this a failure): %v", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(c.close)
	return c
}

// testLog sends the audit's lines to the test log.
type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(string(p))
	return len(p), nil
}
