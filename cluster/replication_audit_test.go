package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"allot/server/servertest"
)

// TestLeaseKeeperKeepsALeaseARenewalWithoutReplyRenewed: a renewal whose
// reply is lost (it timed out while NATS elected the bucket's leader, or
// the connection dropped after the request went out and came back within
// the lease) may still have landed: the bucket then holds this node's
// lease at a revision the keeper does not know, and its next renewal
// fails the compare-and-set. That is not a lost lease: the keeper must
// keep it. Before, it gave it up: the primary stepped down, and, as the
// lease still named it, no node (itself included) could take it until
// the TTL ran out: an outage of a TTL or more for a blip within the lease.
// A lease that really names another node is still lost.
func TestLeaseKeeperKeepsALeaseARenewalWithoutReplyRenewed(t *testing.T) {
	// Two seconds: a keeper steps down when no renewal sent within the
	// TTL less 10% succeeded (leaseMargin), and on a loaded two-core box
	// with 1 s a renewal of the bucket (R3, sync_always) missed that.
	const ttl = 2 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l := testShardLog(t, "relet", ttl)
	n := &node{cfg: Config{LeaseTTL: ttl, NodeID: "k"}, log: l, logger: slog.New(slog.DiscardHandler)}
	me := leaseValue{Node: "k", RESP: "127.0.0.1:1", HTTP: "127.0.0.1:2"}
	other := leaseValue{Node: "other", RESP: "127.0.0.1:3", HTTP: "127.0.0.1:4"}

	rev, err := l.takeLease(ctx, me)
	if err != nil {
		t.Fatal(err)
	}
	// The renewal that landed without a reply: the keeper still knows rev.
	if _, err := l.renewLease(ctx, me, rev); err != nil {
		t.Fatal(err)
	}
	k := n.keepLease(me, rev, time.Now(), nil)
	time.Sleep(3 * ttl)
	if err := k.err(); err != nil {
		t.Fatalf("the keeper gave up a lease that names its node: %v", err)
	}
	if _, err := l.takeLease(ctx, other); err == nil {
		t.Fatal("another node took the lease after 3 TTLs of a kept lease")
	}
	if held := k.stop(); held <= rev+1 {
		t.Fatalf("the keeper holds revision %d; the bucket was at %d before it started: never renewed", held, rev+1)
	}

	// The lease lapses; another node takes it: a keeper of the old
	// revision loses it, though its value is a lease of its own node.
	deadline := time.Now().Add(10 * ttl)
	for {
		if _, err = l.takeLease(ctx, other); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the lease of a stopped keeper never lapsed: %v", err)
		}
		time.Sleep(ttl / 10)
	}
	k = n.keepLease(me, rev, time.Now(), nil)
	select {
	case <-k.ctx.Done():
	case <-time.After(5 * ttl):
		t.Fatal("a keeper of a lease another node took did not notice")
	}
	if err := k.err(); err == nil || !strings.Contains(err.Error(), "lost the lease") {
		t.Fatalf("keeper of a lease another node took: err %v, want lost the lease", err)
	}
}

// TestShardResourcesMadeByHandWithOtherSettings: a shard's stream, lease
// bucket or object store that already exists (made by hand, or by a node
// given other flags) with settings a node cannot use must be refused at
// start, clearly (a ConfigError: `allot serve` exits 2 saying what to do),
// and left as it is. Before, a memory-storage stream or bucket made the
// node retry for ever ("JetStream not ready; retrying": the server refuses
// to change a storage type), and a lease bucket of another TTL was
// silently changed to this node's TTL, under the running primary, which
// then renewed a 30 s lease every 7.5 s in a bucket that forgot it after
// 3 s: a failover every few seconds. A stream of other replicas is made
// R3, as the design wants, and used.
func TestShardResourcesMadeByHandWithOtherSettings(t *testing.T) {
	_, urls := privateNATS(t)
	for _, tc := range []struct {
		name string
		make func(ctx context.Context, js jetstream.JetStream, n names) error
		want string // in the error; "" when the node must start
	}{
		{"memory stream", func(ctx context.Context, js jetstream.JetStream, n names) error {
			_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: n.stream, Subjects: []string{n.subject}, Storage: jetstream.MemoryStorage, Replicas: 3})
			return err
		}, "memory storage"},
		{"memory lease bucket", func(ctx context.Context, js jetstream.JetStream, n names) error {
			_, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: n.lease, TTL: 3 * time.Second, Storage: jetstream.MemoryStorage, Replicas: 3})
			return err
		}, "memory storage"},
		{"lease bucket of another TTL", func(ctx context.Context, js jetstream.JetStream, n names) error {
			_, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: n.lease, TTL: 30 * time.Second, Storage: jetstream.FileStorage, Replicas: 3})
			return err
		}, "TTL of 30s"},
		{"R1 stream", func(ctx context.Context, js jetstream.JetStream, n names) error {
			_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: n.stream, Subjects: []string{n.subject}, Storage: jetstream.FileStorage, Replicas: 1})
			return err
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			shard := fmt.Sprintf("hand%d", time.Now().UnixNano()%1e9)
			n, err := namesOf(shard)
			if err != nil {
				t.Fatal(err)
			}
			nc, js, err := connect(urls, "audit")
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			defer func() {
				dctx, dcancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer dcancel()
				js.DeleteStream(dctx, n.stream)
				js.DeleteKeyValue(dctx, n.lease)
				js.DeleteObjectStore(dctx, n.snaps)
			}()
			for {
				err := tc.make(ctx, js, n)
				if err == nil {
					break
				}
				if ctx.Err() != nil {
					t.Fatal(err)
				}
				time.Sleep(200 * time.Millisecond)
			}
			octx, ocancel := context.WithTimeout(ctx, 15*time.Second)
			defer ocancel()
			start := time.Now()
			l, err := openShard(octx, urls, shard, "k", 3*time.Second, 0, slog.New(slog.DiscardHandler))
			took := time.Since(start)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("openShard: %v", err)
				}
				defer l.close()
				info, err := l.stream.Info(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if info.Config.Replicas != 3 || info.Config.Storage != jetstream.FileStorage {
					t.Fatalf("the stream is R%d %v, want R3 file", info.Config.Replicas, info.Config.Storage)
				}
				return
			}
			var ce *ConfigError
			if err == nil {
				l.close()
			}
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.want) || took > 10*time.Second {
				t.Errorf("openShard after %v: %v; want at once a ConfigError saying %q", took.Round(time.Millisecond), err, tc.want)
			}
			if kv, err := js.KeyValue(ctx, n.lease); err == nil {
				if st, err := kv.Status(ctx); err == nil && tc.name == "lease bucket of another TTL" && st.TTL() != 30*time.Second {
					t.Errorf("the lease bucket's TTL was changed to %v", st.TTL())
				}
			}
		})
	}
}

// TestConfigRefusesBadNATSURLsAndNodeIDs: --cluster is checked before the
// node touches NATS. Before, a list with no URL in it ("," or " , ")
// passed, and the NATS client, finding none, connected to its default,
// nats://127.0.0.1:4222: whatever server runs there, another cluster's or
// a machine's own. A malformed URL failed only at connect, as an
// operational error (exit 1). A node ID with a control character cannot
// travel in the log's headers as it is (a newline becomes a space there),
// so the node would not recognise its own appends.
func TestConfigRefusesBadNATSURLsAndNodeIDs(t *testing.T) {
	for _, tc := range []struct {
		urls, node, want string
	}{
		{",", "a", "no NATS URL"},
		{" , ", "a", "no NATS URL"},
		{"nats://127.0.0.1:14220,,nats://127.0.0.1:14230", "a", "an empty URL"},
		{"nats://a b", "a", "nats://a b"},
		{"nats://127.0.0.1:notaport", "a", "port"},
		{"nats://127.0.0.1:0", "a", "port"},
		{"http://127.0.0.1:14220", "a", `scheme "http"`},
		{"nats://:14220", "a", "no host"},
		{"nats://127.0.0.1:14220", "a\nb", "control character"},
		{"nats://127.0.0.1:14220,nats://127.0.0.1:14230", "a", ""},
		{"127.0.0.1:14220, tls://h.example:4222", "node-1.example", ""},
		{"nats://h.example", "", ""},
	} {
		c := Config{URLs: tc.urls, NodeID: tc.node}
		c.Engine.Dir = t.TempDir()
		c.Server.RESPAddr = "127.0.0.1:0"
		err := c.Validate()
		if tc.want == "" {
			if err != nil {
				t.Errorf("--cluster %q --node-id %q: %v", tc.urls, tc.node, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("--cluster %q --node-id %q: %v, want an error saying %q", tc.urls, tc.node, err, tc.want)
		}
	}
}

// TestServeRefusesAnEmptyShard: `--shard ""` (a script's unset variable)
// is not the shard main: `allot serve` exits 2 saying so, at once. Before,
// the node joined shard main silently. A malformed --cluster exits 2 too,
// as the configuration error it is. Neither touches NATS (nothing listens
// on port 1).
func TestServeRefusesAnEmptyShard(t *testing.T) {
	bin := servertest.BuildAllot(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--cluster", "nats://127.0.0.1:1", "--shard", ""}, "--shard"},
		{[]string{"--cluster", "nats://a b"}, "nats://a b"},
		// A cluster node's flags without --cluster: ignored before.
		{[]string{"--shard", "s1"}, "--shard: for a node of a cluster, with --cluster"},
		{[]string{"--node-id", "a", "--lease-ttl", "5s"}, "--lease-ttl, --node-id"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		args := append([]string{"serve", "--data", t.TempDir(), "--resp", "127.0.0.1:0", "--http", ""}, tc.args...)
		out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
		timedOut := ctx.Err() != nil
		cancel()
		var ee *exec.ExitError
		if timedOut || !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), tc.want) {
			t.Errorf("allot %q: %v (timed out: %v), want exit 2 saying %q:\n%s", args, err, timedOut, tc.want, out)
		}
	}
}
