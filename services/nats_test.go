package services

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func TestNATSConfig(t *testing.T) {
	cfg := Config{Dir: "/x"}
	in := &instance{cfg: &cfg, dir: "/x/nats-2", port: natsServer{node: 2}.basePort()}
	conf := natsServer{node: 2}.config(in)
	for _, want := range []string{"server_name: allot-nats-2", "listen: 127.0.0.1:14230", "sync_interval: always",
		"listen: 127.0.0.1:14231", "nats-route://127.0.0.1:14221, nats-route://127.0.0.1:14231, nats-route://127.0.0.1:14241"} {
		if !strings.Contains(conf, want) {
			t.Errorf("config lacks %q:\n%s", want, conf)
		}
	}
	list, err := serversByName([]string{NATS})
	if err != nil || len(list) != 3 || list[2].name() != "nats-3" {
		t.Fatalf("nats names %v nodes: %v", list, err)
	}
}

// The acceptance test of `allot services up nats`: a private cluster (its
// own directory and ports, so the shared one is never killed) comes up,
// an R3 file stream takes synced publishes, one node is killed with
// SIGKILL and publishing goes on; every acknowledged message is in the
// stream, and the killed node comes back.
func TestNATSClusterSurvivesANodeKill(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts nats-server")
	}
	cfg := WithPortOffset(Config{Dir: filepath.Join(t.TempDir(), "s"), Timeout: time.Minute}, 405)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := Up(ctx, cfg, NATS); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("nats: %v", err)
		}
		t.Skipf("nats could not be brought up (CI=true makes this a failure): %v", err)
	}
	defer Down(context.Background(), cfg, NATS)
	t.Log("cluster up")
	var urls []string
	for _, n := range NATSNodes {
		a, _ := Addr(cfg, n)
		urls = append(urls, "nats://"+a)
	}
	nc, err := nats.Connect(strings.Join(urls, ","), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	// The cluster elects its meta leader after the nodes meet.
	var stream jetstream.Stream
	deadline := time.Now().Add(30 * time.Second)
	for {
		sctx, scancel := context.WithTimeout(ctx, 5*time.Second)
		stream, err = js.CreateStream(sctx, jetstream.StreamConfig{Name: "ALLOT_TEST", Subjects: []string{"allot.test"},
			Storage: jetstream.FileStorage, Replicas: 3})
		scancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no R3 stream within 30 s: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	acked := 0
	// Every JetStream call gets a short deadline of its own: the test's
	// context is long, and a call after a kill must not wait on it.
	short := func() context.Context {
		c, cancel := context.WithTimeout(ctx, 5*time.Second)
		t.Cleanup(cancel)
		return c
	}
	publish := func(n int, tolerate bool) {
		t.Helper()
		giveUp := time.Now().Add(60 * time.Second)
		for i := 0; i < n; i++ {
			if time.Now().After(giveUp) {
				t.Fatalf("publishing stalled at %d acknowledged", acked)
			}
			pctx, pcancel := context.WithTimeout(ctx, 5*time.Second)
			ack, err := js.Publish(pctx, "allot.test", []byte(fmt.Sprint(acked)), jetstream.WithExpectLastSequence(uint64(acked)))
			pcancel()
			if err != nil {
				// A publish whose ack was lost to the kill may have landed:
				// the expected-sequence check tells.
				var apiErr *jetstream.APIError
				if tolerate && (errors.As(err, &apiErr) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) || errors.Is(err, jetstream.ErrNoStreamResponse)) {
					info, ierr := stream.Info(short())
					if ierr == nil && int(info.State.LastSeq) == acked+1 {
						acked++
					}
					i--
					t.Logf("publish %d: %v (retrying)", acked+1, err)
					time.Sleep(50 * time.Millisecond)
					continue
				}
				t.Fatalf("publish %d: %v", acked+1, err)
			}
			if int(ack.Sequence) != acked+1 {
				t.Fatalf("publish %d acknowledged as sequence %d", acked+1, ack.Sequence)
			}
			acked++
		}
	}
	publish(200, false)
	info, err := stream.Info(short())
	if err != nil {
		t.Fatal(err)
	}
	victim := NATSNodes[0]
	for _, n := range NATSNodes {
		if "allot-"+n == info.Cluster.Leader {
			victim = n // the stream's leader: the hardest case
		}
	}
	t.Logf("killing %s", victim)
	if _, err := Kill(ctx, cfg, victim); err != nil {
		t.Fatal(err)
	}
	t.Logf("killed %s (stream leader %s) after %d acknowledged publishes", victim, info.Cluster.Leader, acked)
	start := time.Now()
	publish(200, true)
	t.Logf("200 more publishes acknowledged with one node down, in %v", time.Since(start).Round(time.Millisecond))
	info, err = stream.Info(short())
	if err != nil {
		t.Fatal(err)
	}
	if int(info.State.Msgs) != acked || int(info.State.LastSeq) != acked {
		t.Fatalf("stream holds %d messages up to %d; %d were acknowledged", info.State.Msgs, info.State.LastSeq, acked)
	}
	for seq := 1; seq <= acked; seq += 37 {
		m, err := stream.GetMsg(short(), uint64(seq))
		if err != nil || string(m.Data) != fmt.Sprint(seq-1) {
			t.Fatalf("message %d: %v %q", seq, err, m.Data)
		}
	}
	// The killed node comes back on its data.
	if err := Up(ctx, cfg, victim); err != nil {
		t.Fatal(err)
	}
}
