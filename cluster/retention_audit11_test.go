package cluster

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"allot/inventory"
)

// The retention window (how long finished holds and idempotency keys are
// remembered) is the shard's, not a node's: a standby applies its
// primary's frames under the shortest window and answers with its own
// once promoted. A standby started with a shorter --retention than its
// primary's forgot a key the primary still answered, and after a failover
// a repeat with that key was applied a second time.

// TestNodeWithAnotherRetentionIsRefused: the first node records the
// shard's window (24 h here); a node given another (2 s) exits at start,
// with exit code 2 and a message naming both. Were it let in, the run
// goes on to show what it costs: a capture keyed on the primary, a
// failover past the standby's window, the same request again: applied
// twice.
func TestNodeWithAnotherRetentionIsRefused(t *testing.T) {
	c := newShardCluster(t)
	a := c.start("a", "--retention", "24h")
	if p := c.waitPrimary("", 30*time.Second); p != a {
		t.Fatalf("primary %s, want a", p.id)
	}
	b := &nodeProc{id: "b", resp: freePort(t), http: freePort(t), data: filepath.Join(c.dir, "b")}
	c.nodes["b"] = b
	err := c.launch(b, []string{"--retention", "2s"})
	if err != nil {
		<-b.exited
		code := b.cmd.ProcessState.ExitCode()
		tail := b.tail()
		if code != 2 || !strings.Contains(tail, "retention of 24h0m0s") || !strings.Contains(tail, "--retention 2s") {
			t.Fatalf("b refused with exit code %d and %q; want 2 and a message naming the shard's 24h0m0s and its 2s", code, tail)
		}
		t.Logf("b refused: %s", strings.TrimSpace(tail))
		// The same window is welcome.
		if err := c.launch(b, []string{"--retention", "24h"}); err != nil {
			t.Fatalf("b with the shard's window: %v", err)
		}
		return
	}

	// b runs with a 2 s window as a's standby.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	row := rowKey("ret", "w1")
	if _, err := a.cli.Stock(ctx, row, 10, 1); err != nil {
		t.Fatal(err)
	}
	capture := inventory.Capture(row.Group(), 1)
	capture.IdempotencyKey = "k-ret"
	if res, err := a.cli.Do(ctx, capture, nil); err != nil || res.Code != inventory.CodeOK {
		t.Fatalf("capture: %+v %v", res, err)
	}
	if res, err := a.cli.Do(ctx, capture, nil); err != nil || res.Code != inventory.CodeOK {
		t.Fatalf("a repeat on a: %+v %v; want the first reply", res, err)
	}
	if got, err := a.cli.Get(ctx, row); err != nil || got.Count != 9 {
		t.Fatalf("row on a after a capture and its repeat: %d %v; want 9", got.Count, err)
	}
	waitSameRows(t, b, a)
	time.Sleep(3 * time.Second) // past b's window, well within a's
	a.kill(syscall.SIGKILL)
	next := c.waitPrimary(a.id, 30*time.Second)
	res, err := next.cli.Do(ctx, capture, nil)
	got, gerr := next.cli.Get(ctx, row)
	t.Fatalf("b started with --retention 2s on a shard whose primary ran with 24h (want it refused at start); "+
		"after a failover the repeat of key k-ret was answered %s %v, and the row holds %d (%v), want 9",
		res.Code, err, got.Count, gerr)
}

// TestShardRetentionRecordedOnce: the stream of a shard made before the
// window was recorded takes the first node's; from then on another
// window is a ConfigError (allot serve exits 2) and the same one opens.
func TestShardRetentionRecordedOnce(t *testing.T) {
	l := testShardLog(t, "ret", 3*time.Second) // as an earlier allot made it: no window
	if got := l.stream.CachedInfo().Config.Metadata[retentionKey]; got != "" {
		t.Fatalf("a shard opened without a window records %q", got)
	}
	shard := strings.TrimPrefix(l.names.stream, "ALLOT_")
	open := func(retention time.Duration) (*shardLog, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		o, err := openShard(ctx, natsOnce.urls, shard, "r", 3*time.Second, retention, slog.New(slog.DiscardHandler))
		if err == nil {
			t.Cleanup(o.close)
		}
		return o, err
	}
	o, err := open(time.Hour)
	if err != nil {
		t.Fatalf("the first node with a window: %v", err)
	}
	if got := o.stream.CachedInfo().Config.Metadata[retentionKey]; got != "3600000" {
		t.Fatalf("recorded window %q, want 3600000", got)
	}
	if got := o.stream.CachedInfo().Config.Metadata[logIDKey]; got == "" || got != l.logID {
		t.Fatalf("the log id changed with the window: %q, was %q", got, l.logID)
	}
	_, err = open(2 * time.Hour)
	var ce *ConfigError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "retention of 1h0m0s") || !strings.Contains(err.Error(), "--retention 2h0m0s") {
		t.Fatalf("a node with another window: %v; want a ConfigError naming 1h0m0s and 2h0m0s", err)
	}
	if _, err := open(time.Hour); err != nil {
		t.Fatalf("a node with the shard's window: %v", err)
	}
}
