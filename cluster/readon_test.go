package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"allot/engine"
	"allot/inventory"
)

// TestStandbyBehindATrimmedLogSaysSo: a standby that was behind (paused,
// cut off) while the log was trimmed past its position behind a stored
// snapshot cannot read on. Reading the log on must say so, so that the
// node starts again from the snapshot, rather than take the missing
// message for the log's end and serve its old state until the next write;
// at the log's real end it reads nothing and says nothing.
func TestStandbyBehindATrimmedLogSaysSo(t *testing.T) {
	l := testShardLog(t, "behind", 3*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var last uint64
	for range 3 { // fences: messages a standby applies without a frame
		seq, err := l.fence(ctx, "k", last, 0, []byte(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		last = seq
	}
	if err := l.stream.Purge(ctx, jetstream.WithPurgeSequence(last+1)); err != nil {
		t.Fatal(err)
	}
	e, err := engine.Open(engine.Config{Dir: t.TempDir(), Durability: engine.DurabilityWrite})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	n := &node{cfg: Config{NodeID: "k"}, log: l, logger: slog.New(slog.DiscardHandler)}

	var applied atomic.Uint64 // behind every trimmed message
	if err := n.readOn(ctx, e, &applied); !errors.Is(err, errBehindTrimmedLog) {
		t.Errorf("a standby behind the trimmed log read on with %v, want errBehindTrimmedLog", err)
	}
	applied.Store(last) // at the end of the (empty) log
	if err := n.readOn(ctx, e, &applied); err != nil || applied.Load() != last {
		t.Errorf("at the log's end: %v, applied %d, want no error and %d", err, applied.Load(), last)
	}
}

// TestPausedStandbyCatchesUpPastATrimmedLog is the case above with real
// nodes: a standby paused (SIGSTOP) while the primary writes past a
// snapshot (every 50 ops) and trims the whole log behind it, on a shard
// that then goes quiet. Resumed, the standby must read the primary's state
// within 5 s (it starts again from the stored snapshot); before, it served
// its old state until the next write.
func TestPausedStandbyCatchesUpPastATrimmedLog(t *testing.T) {
	c := newShardCluster(t)
	c.start("a", "--snapshot-every-ops", "50")
	primary := c.waitPrimary("", 30*time.Second)
	standby := c.start("b", "--snapshot-every-ops", "50")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	key := rowKey("stale", "w1")
	if _, err := primary.cli.Stock(ctx, key, 1000, 1); err != nil {
		t.Fatal(err)
	}
	count := func(p *nodeProc) int64 {
		res, err := p.cli.Get(ctx, key)
		if err != nil {
			return -1
		}
		return res.Count
	}
	waitCount := func(p *nodeProc, want int64, within time.Duration, what string) {
		t.Helper()
		deadline := time.Now().Add(within)
		for count(p) != want {
			if time.Now().After(deadline) {
				t.Fatalf("%s: node %s reads %d, want %d\n%s", what, p.id, count(p), want, p.tail())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitCount(standby, 1000, 10*time.Second, "before the pause")
	evs, err := primary.cli.Changes(ctx, 0, 100, 0)
	if err != nil || len(evs) >= 50 {
		t.Fatalf("%d ops before the captures (%v), want fewer than 50", len(evs), err)
	}
	captures := 50 - len(evs) // to op 50: the snapshot's, then the log's last
	standby.kill(syscall.SIGSTOP)
	// Past the life of the standby's pull request (followExpiry): NATS
	// stops sending it messages, which would otherwise wait in its socket
	// for the resume.
	time.Sleep(followExpiry + time.Second)
	for range captures {
		if res, err := primary.cli.Do(ctx, inventory.Capture(key.Group(), 1), nil); err != nil || res.Code != inventory.CodeOK {
			standby.kill(syscall.SIGCONT)
			t.Fatalf("capture: %v %v", res, err)
		}
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		sctx, scancel := context.WithTimeout(ctx, 2*time.Second)
		var msgs uint64 = 1
		var state string
		if s, err := c.js.Stream(sctx, c.names.stream); err == nil {
			if info, err := s.Info(sctx); err == nil {
				state = fmt.Sprintf("%+v", info.State)
				if info.State.FirstSeq > 1 {
					msgs = info.State.Msgs
				}
			}
		}
		scancel()
		if msgs == 0 {
			break
		}
		if time.Now().After(deadline) {
			standby.kill(syscall.SIGCONT)
			t.Fatalf("the log was not trimmed to empty within 15 s (%s): the test proves nothing\n%s", state, primary.tail())
		}
		time.Sleep(100 * time.Millisecond)
	}
	standby.kill(syscall.SIGCONT)
	waitCount(standby, int64(1000-captures), 5*time.Second, "after the resume, on a quiet shard trimmed past the standby")
}
