package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"allot/services"

	"github.com/nats-io/nats.go/jetstream"
)

// The log's identity is the same whichever NATS server leads its stream,
// after a NATS server's restart too. It was the stream's creation time as
// JetStream reports it, which did not hold: in CI's cluster kill audit
// (a NATS node killed and paused) it read 6 ms later after a leader
// change, and a node restarted then refused its own data directory as
// another log's; this test saw it once (0.5 ms), not on every run. The
// identity is now an id the stream's config carries.
func TestLogIdentityOutlivesALeaderChange(t *testing.T) {
	// Three nodes start at once and each creates the shard's stream, as
	// the nodes of a new shard do.
	_, urls := privateNATS(t)
	shard := fmt.Sprintf("idlead%d", time.Now().UnixNano()%1e9)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	logs := make([]*shardLog, 3)
	errs := make([]error, 3)
	var wg sync.WaitGroup
	for i := range logs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			logs[i], errs[i] = openShard(ctx, urls, shard, fmt.Sprintf("n%d", i), 3*time.Second, 0, slog.New(slog.DiscardHandler))
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	l := logs[0]
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		l.js.DeleteStream(ctx, l.names.stream)
		l.js.DeleteKeyValue(ctx, l.names.lease)
		l.js.DeleteObjectStore(ctx, l.names.snaps)
		for _, l := range logs {
			l.close()
		}
	})
	first, err := l.identity(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// A NATS server killed and started again reads its replica back from
	// its disk.
	cfg, _ := privateNATS(t)
	info := func() *jetstream.StreamInfo {
		for {
			ictx, icancel := context.WithTimeout(ctx, 2*time.Second)
			info, err := l.stream.Info(ictx)
			icancel()
			if err == nil && info.Cluster != nil && info.Cluster.Leader != "" {
				return info
			}
			if ctx.Err() != nil {
				t.Fatalf("the stream has no leader: %v", err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	// The server leading the stream, killed and started again.
	victim := strings.TrimPrefix(info().Cluster.Leader, "allot-")
	if _, err := services.Kill(ctx, cfg, victim); err != nil {
		t.Fatal(err)
	}
	if err := services.Up(ctx, cfg, victim); err != nil {
		t.Fatal(err)
	}
	// Every server leads the stream in turn (a step-down names the server
	// preferred next).
	for _, n := range services.NATSNodes {
		want := "allot-" + n
		for info().Cluster.Leader != want {
			body := fmt.Sprintf(`{"placement":{"preferred":%q}}`, want)
			msg, err := l.nc.Request("$JS.API.STREAM.LEADER.STEPDOWN."+l.names.stream, []byte(body), 5*time.Second)
			if err != nil {
				t.Fatalf("step the stream's leader down for %s: %v", want, err)
			}
			if ctx.Err() != nil {
				t.Fatalf("%s does not lead the stream: %s", want, msg.Data)
			}
			time.Sleep(200 * time.Millisecond)
		}
		now, err := l.identity(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !now.equal(first) {
			t.Fatalf("the log's identity was %s, and %s with %s leading the stream", first, now, want)
		}
	}
}
