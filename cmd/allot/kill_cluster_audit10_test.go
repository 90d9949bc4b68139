package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"allot/bench/kill"
	"allot/cluster"
	"allot/services"
)

// After a pause of NATS nodes (the pause-nats fault), JetStream refuses
// every request for a while ("JetStream system temporarily unavailable":
// no meta leader, or one not caught up yet). The audit's cleanup must wait
// for it and delete the shard, not give up at the first refusal and leave
// the shard's streams in .allot/kill-services.
func TestClusterCleanupWaitsForJetStream(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := privateCluster(ctx, t, nil)
	var log bytes.Buffer
	c.log = &log

	all := jetStreamOf(t, c.urls)
	if got := shardStreams(ctx, t, all, c.shard); len(got) != 3 {
		t.Fatalf("the shard %s has streams %v, want its log, lease bucket and snapshot store", c.shard, got)
	}

	// Two of the three nodes paused: the one left has no quorum.
	first, err := services.Addr(c.up, services.NATSNodes[0])
	if err != nil {
		t.Fatal(err)
	}
	resume := pauseAllBut(ctx, t, c, first)

	c.close()
	t.Logf("the cleanup's log: %q", log.String())
	resume() // if the cleanup has not: what it left is looked at in a cluster that answers
	if left := shardStreams(ctx, t, all, c.shard); len(left) != 0 {
		t.Fatalf("the cleanup left the shard's streams %v; its log:\n%s", left, log.String())
	}
	if log.Len() != 0 {
		t.Errorf("the cleanup deleted the shard but logged:\n%s", log.String())
	}
}

// jetStreamOf connects to urls, for the test's own look at the streams.
func jetStreamOf(t *testing.T, urls string) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(urls, nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond),
		nats.PingInterval(time.Second), nats.MaxPingsOutstanding(2))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// waitUnavailable waits until js refuses a request for want of a meta
// leader.
func waitUnavailable(ctx context.Context, t *testing.T, js jetstream.JetStream) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var err error
	for ctx.Err() == nil {
		rctx, rcancel := context.WithTimeout(ctx, 2*time.Second)
		_, err = js.AccountInfo(rctx)
		rcancel()
		// 10008: "JetStream system temporarily unavailable", the
		// refusal of a node that has no meta leader.
		var api *jetstream.APIError
		if errors.As(err, &api) && api.ErrorCode == 10008 {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("JetStream did not become unavailable with two of its three nodes paused: %v", err)
}

// shardStreams lists the streams whose names contain shard, waiting (30 s
// at most) for JetStream to answer.
func shardStreams(ctx context.Context, t *testing.T, js jetstream.JetStream, shard string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var err error
	for ctx.Err() == nil {
		rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
		names := js.StreamNames(rctx)
		var out []string
		for n := range names.Name() {
			if strings.Contains(n, shard) {
				out = append(out, n)
			}
		}
		err = names.Err()
		rcancel()
		if err == nil {
			return out
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("JetStream did not list its streams within 30 s: %v", err)
	return nil
}

// When JetStream does not answer within the cleanup's bound, the cleanup
// says which shard it left, what of it and where, and the audit's result
// carries that (the table prints it, --quiet or not) without changing the
// verdict.
func TestClusterCleanupSaysWhatItLeft(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := privateCluster(ctx, t, nil)
	c.log = io.Discard
	first, err := services.Addr(c.up, services.NATSNodes[0])
	if err != nil {
		t.Fatal(err)
	}
	up := c.up
	resume := pauseAllBut(ctx, t, c, first)

	// A timeout services refuses: the cleanup's Up fails before it
	// continues anything, so JetStream stays without quorum.
	c.up.Timeout = -1
	defer func(d time.Duration) { clusterCleanup = d }(clusterCleanup)
	clusterCleanup = 3 * time.Second
	leftErr := c.cleanup()
	resume()
	if leftErr == nil {
		t.Fatal("the cleanup of a shard JetStream would not delete reported nothing")
	}
	left := leftErr.Error()
	t.Logf("the cleanup said: %s", left)
	for _, want := range []string{c.shard, filepath.Join(c.up.Dir, "nats-*", "jetstream"), "refused or did not answer", "stream, lease bucket and snapshot store"} {
		if !strings.Contains(left, want) {
			t.Errorf("the cleanup's report does not say %q: %s", want, left)
		}
	}
	if strings.Contains(left, "\n") {
		t.Errorf("the cleanup's report spans lines: %q", left)
	}
	res := &kill.Result{Store: "allot-cluster", Durability: "fsync", Kills: 1, Acked: 1, Cleanup: left}
	var table bytes.Buffer
	if err := kill.WriteTable(&table, []*kill.Result{res}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), "allot-cluster fsync: cleanup: "+left) || res.Verdict() != "ok" || res.Failed() {
		t.Errorf("the table does not carry the cleanup's report beside an unchanged verdict (%s, failed %v):\n%s", res.Verdict(), res.Failed(), table.String())
	}

	// What was left is still the shard's, and goes once JetStream answers.
	if got := shardStreams(ctx, t, jetStreamOf(t, c.urls), c.shard); len(got) == 0 {
		t.Fatalf("the cleanup reported leftovers, but the shard %s has no streams", c.shard)
	}
	c.up = up
	clusterCleanup = 30 * time.Second
	if c.in, err = cluster.Inspect(c.urls, c.shard); err != nil {
		t.Fatal(err)
	}
	if err := c.cleanup(); err != nil {
		t.Fatal(err)
	}
	if got := shardStreams(ctx, t, jetStreamOf(t, c.urls), c.shard); len(got) != 0 {
		t.Fatalf("the shard's streams %v outlived a cleanup once JetStream answered", got)
	}
}

// pauseAllBut pauses the audit cluster's NATS nodes but the first (at
// first), points c's inspector at the first (as one connected to a node
// that was not paused would be) and waits until that node says JetStream
// is unavailable. The returned func resumes them (also at the test's end).
func pauseAllBut(ctx context.Context, t *testing.T, c *clusterServer, first string) (resume func()) {
	t.Helper()
	up := c.up
	paused := services.NATSNodes[1:]
	resume = func() {
		for _, n := range paused {
			if _, err := services.Resume(context.Background(), up, n); err != nil {
				t.Error(err)
			}
		}
	}
	t.Cleanup(resume)
	for _, n := range paused {
		if _, err := services.Pause(ctx, up, n); err != nil {
			t.Fatal(err)
		}
	}
	c.in.Close()
	var err error
	if c.in, err = cluster.Inspect("nats://"+first, c.shard); err != nil {
		t.Fatal(err)
	}
	waitUnavailable(ctx, t, jetStreamOf(t, "nats://"+first))
	return resume
}
