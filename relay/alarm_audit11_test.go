package relay_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"allot/relay"
	"allot/server/servertest"
)

// Under a resource alarm (here: a disk free limit far above the disk) the
// broker blocks the relay's connection and reads nothing more from it, not
// even a connection.close. The relay logs the block, gives up on the round
// at its confirm timeout, closes the connection without waiting for ever,
// reconnects, and returns within 10 s of its context's cancel (SIGTERM).
// Once the alarm clears, a relay from the same checkpoint delivers every
// event.
func TestRelayAudit11BrokerAlarm(t *testing.T) {
	scfg, url := privateBroker(t)
	ch := openChannel(t, url)
	const exchange, queue = "audit11.alarm", "audit11.alarm.q"
	s := servertest.Start(t, servertest.Options{})
	stock(t, s.Engine, 0, 1)
	checkpoint := filepath.Join(t.TempDir(), "cp")
	var log syncBuffer
	newRelay := func() *relay.Relay {
		r, err := relay.New(relay.Config{Addr: s.RESPAddr(), AMQPURL: url, Exchange: exchange, Queue: queue,
			Checkpoint: checkpoint, Block: 100 * time.Millisecond, ConfirmTimeout: 2 * time.Second,
			RetryPause: 100 * time.Millisecond, RetryPauseMax: 500 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(&log, nil))})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	r := newRelay()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	waitPosition(t, r, 1)

	t.Log(strings.TrimSpace(rabbitmqctl(t, scfg, "set_disk_free_limit", "1000000GB")))
	stock(t, s.Engine, 1, 3)
	// A round (2 s), the close (5 s at most) and a reconnect.
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(log.String(), "reconnected") && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	text := log.String()
	for _, want := range []string{"blocks publishing", "low on disk", "not confirmed", "reconnected"} {
		if !strings.Contains(text, want) {
			t.Errorf("under a disk alarm, the log does not say %q after 30 s:\n%s", want, text)
		}
	}
	if pos := r.Stats.Position.Load(); pos != 1 {
		t.Errorf("the relay checkpointed %d under the alarm", pos)
	}
	cancel()
	stopped := time.Now()

	select {
	case err := <-done:
		if err != nil {
			t.Error(err)
		}
		t.Logf("Run returned %v after its context was cancelled", time.Since(stopped).Round(time.Millisecond))
	case <-time.After(10 * time.Second):
		t.Fatalf("under a broker alarm, Run had not returned 10 s after its context was cancelled:\n%s", log.String())
	}

	t.Log(strings.TrimSpace(rabbitmqctl(t, scfg, "set_disk_free_limit", "50MB")))
	r = newRelay()
	stop := runRelay(t, r)
	waitPosition(t, r, 4)
	stop()
	// The broker took the publishes it read before it blocked: the new
	// relay sends them again, unmarked (relay/doc.go).
	checkConsumed(t, s.RESPAddr(), 1, 4, drain(t, ch, queue))
}

// A publish blocked in its write (a broker that reads no more, its TCP
// window full) is bounded too: amqp091-go v1.10.0 ignores the publish's
// context, so the relay closes the connection, whose deadline ends the
// write. The round fails and the relay returns promptly on cancel.
func TestRelayAudit11StalledPublishIsBounded(t *testing.T) {
	_, url := privateBroker(t)
	ch := openChannel(t, url)
	const exchange, queue = "audit11.stall", "audit11.stall.q"
	defer ch.QueueDelete(queue, false, false, false)
	s := servertest.Start(t, servertest.Options{})
	var fault faultNet
	var log syncBuffer
	r, err := relay.New(relay.Config{Addr: s.RESPAddr(), AMQPURL: url, Exchange: exchange, Queue: queue,
		Checkpoint: filepath.Join(t.TempDir(), "cp"), Block: 100 * time.Millisecond, ConfirmTimeout: time.Second,
		RetryPause: 50 * time.Millisecond, RetryPauseMax: 500 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	r.SetDial(fault.dial)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	stock(t, s.Engine, 0, 1)
	waitPosition(t, r, 1)

	fault.set(faultStall)
	stock(t, s.Engine, 1, 2)
	// The confirm timeout (1 s), then the close's deadline (5 s) ends the
	// write.
	deadline := time.Now().Add(15 * time.Second)
	for !strings.Contains(log.String(), "not confirmed") && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(log.String(), "not confirmed") {
		t.Errorf("a publish stalled in its write: no round failed in 15 s with a confirm timeout of 1 s:\n%s", log.String())
	}
	// Cancel while the next round's publish is stalled again.
	time.Sleep(500 * time.Millisecond)
	cancel()
	stopped := time.Now()
	select {
	case err := <-done:
		if err != nil {
			t.Error(err)
		}
		t.Logf("Run returned %v after its context was cancelled", time.Since(stopped).Round(time.Millisecond))
	case <-time.After(10 * time.Second):
		t.Fatalf("a publish stalled in its write: Run had not returned 10 s after its context was cancelled:\n%s", log.String())
	}
	if pos := r.Stats.Position.Load(); pos != 1 {
		t.Errorf("the relay checkpointed %d, though nothing after seq 1 reached the broker", pos)
	}
}
