package relay_test

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"allot/relay"
	"allot/server/servertest"
)

// Every message names the server history its seq belongs to (header
// allot-history), the same across restarts of the relay; a checkpoint is
// refused on a server of another history (a rebuilt one, with as many
// events or more), with nothing published and the checkpoint kept; a new
// checkpoint on that server relays it under another history.
func TestRelayAudit13History(t *testing.T) {
	url := sharedAMQP(t)
	name := auditName(t)
	ch := broker(t, url, name)
	cp := filepath.Join(t.TempDir(), "cp")
	newRelay := func(addr string, log io.Writer) *relay.Relay {
		r, err := relay.New(relay.Config{Addr: addr, AMQPURL: url, Exchange: name, Queue: name, Checkpoint: cp,
			Block: 50 * time.Millisecond, RetryPause: 50 * time.Millisecond, RetryPauseMax: 200 * time.Millisecond,
			Logger: slog.New(slog.NewTextHandler(log, nil))})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	relayTo := func(addr string, pos uint64) []message {
		t.Helper()
		r := newRelay(addr, io.Discard)
		stop := runRelay(t, r)
		waitPosition(t, r, pos)
		stop()
		return collect(t, ch, name)
	}
	historyOf := func(msgs []message) string {
		t.Helper()
		if len(msgs) == 0 {
			t.Fatal("no message")
		}
		h := msgs[0].history
		for _, m := range msgs {
			if m.history == "" || m.history != h {
				t.Fatalf("seq %d (%s) has allot-history %q, seq %d has %q: want one history, named", m.seq, m.key, m.history, msgs[0].seq, h)
			}
		}
		return h
	}

	a := servertest.Start(t, servertest.Options{})
	stock(t, a.Engine, 0, 5)
	history := historyOf(relayTo(a.RESPAddr(), 5))
	stock(t, a.Engine, 5, 2)
	if h := historyOf(relayTo(a.RESPAddr(), 7)); h != history {
		t.Fatalf("the relay restarted on the same server named its history %q, then %q", history, h)
	}
	if b, err := os.ReadFile(cp); err != nil || !strings.Contains(string(b), history) {
		t.Fatalf("the checkpoint %q (%v) does not name the history %q", b, err, history)
	}

	// Another server: another history, with more events than the
	// checkpoint's seq.
	b := servertest.Start(t, servertest.Options{})
	stock(t, b.Engine, 100, 9)
	var log syncBuffer
	err := runFor(newRelay(b.RESPAddr(), &log), 10*time.Second)
	if err == nil || !strings.Contains(err.Error(), "history") || !strings.Contains(err.Error(), cp) || !strings.Contains(err.Error(), "event 7") {
		t.Fatalf("a checkpoint at 7 of another server's history: Run returned %v; want an error naming the history, event 7 and %s\n%s", err, cp, log.String())
	}
	t.Log(err)
	if seq, err := relay.ReadCheckpoint(cp); err != nil || seq != 7 {
		t.Errorf("the checkpoint is %d (%v), want 7 kept", seq, err)
	}
	if msgs := collect(t, ch, name); len(msgs) != 0 {
		t.Errorf("%d messages of the other server published on the checkpoint's history, the first seq %d", len(msgs), msgs[0].seq)
	}

	// A new checkpoint relays the other server's history, named anew.
	if err := os.Remove(cp); err != nil {
		t.Fatal(err)
	}
	if h := historyOf(relayTo(b.RESPAddr(), 9)); h == history {
		t.Errorf("two servers' histories are both named %q", h)
	}
}

// A node of another history in a shard's node list (a node made anew, or
// of another shard) is never read from: when the relay moves to it, it
// refuses the node, naming the history, and publishes none of its events.
func TestRelayAudit13NodeOfAnotherHistory(t *testing.T) {
	url := sharedAMQP(t)
	name := auditName(t)
	ch := broker(t, url, name)
	a := servertest.Start(t, servertest.Options{})
	b := servertest.Start(t, servertest.Options{})
	stock(t, a.Engine, 0, 3)
	stock(t, b.Engine, 100, 6)
	pa := servertest.StartCutProxy(t, a.RESPAddr())
	var log syncBuffer
	r, err := relay.New(relay.Config{Addr: pa.Addr() + "," + b.RESPAddr(), AMQPURL: url, Exchange: name, Queue: name,
		Checkpoint: filepath.Join(t.TempDir(), "cp"), Block: 50 * time.Millisecond, RetryPause: 50 * time.Millisecond,
		RetryPauseMax: 200 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop := runRelay(t, r)
	defer once.Do(stop)
	waitPosition(t, r, 3)
	pa.Close()
	waitLogAll(t, &log, b.RESPAddr(), "history")
	t.Log(firstLine(log.String(), "history"))
	once.Do(stop)
	msgs := collect(t, ch, name)
	for _, m := range msgs {
		if m.seq > 3 || m.history != msgs[0].history {
			t.Errorf("seq %d (%s) of history %q published; only seqs 1..3 of %q came from the checkpoint's server", m.seq, m.key, m.history, msgs[0].history)
		}
	}
	if pos := r.Stats.Position.Load(); pos != 3 {
		t.Errorf("the relay checkpointed %d", pos)
	}
}

// A checkpoint of a seq alone (as an earlier relay wrote it, or a hand
// sets it) is taken on the history of the server the relay reads, named
// after the event at that seq.
func TestRelayAudit13SeqOnlyCheckpointAdopted(t *testing.T) {
	url := sharedAMQP(t)
	name := auditName(t)
	ch := broker(t, url, name)
	s := servertest.Start(t, servertest.Options{})
	stock(t, s.Engine, 0, 5)
	cp := filepath.Join(t.TempDir(), "cp")
	if err := relay.WriteCheckpoint(cp, 2); err != nil {
		t.Fatal(err)
	}
	r, err := relay.New(relay.Config{Addr: s.RESPAddr(), AMQPURL: url, Exchange: name, Queue: name, Checkpoint: cp,
		Block: 50 * time.Millisecond, RetryPause: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	stop := runRelay(t, r)
	waitPosition(t, r, 5)
	stop()
	msgs := collect(t, ch, name)
	if len(msgs) == 0 {
		t.Fatal("after a checkpoint of seq 2, no message")
	}
	if len(msgs) != 3 || msgs[0].seq != 3 || !strings.HasPrefix(msgs[0].history, "2-") {
		t.Fatalf("after a checkpoint of seq 2: %d messages, the first %+v; want seqs 3..5 of a history named after event 2", len(msgs), msgs[0])
	}
	if b, err := os.ReadFile(cp); err != nil || !strings.Contains(string(b), msgs[0].history) {
		t.Errorf("the checkpoint %q (%v) does not name the history %q", b, err, msgs[0].history)
	}
}
