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

// A message that no queue takes is dropped by the broker, which still acks
// it: the relay publishes mandatory, takes the broker's basic.return as a
// failed round, keeps its checkpoint before the event, says which seq and
// SKU reached no queue and what to do, and retries. Once a queue is bound
// (by hand, or declared again by the relay's reconnect) every event gets
// there.
func TestRelayAudit11UnroutableHoldsCheckpoint(t *testing.T) {
	_, url := privateBroker(t)
	ch := openChannel(t, url)

	t.Run("no queue bound", func(t *testing.T) {
		const exchange, queue = "audit11.unbound", "audit11.unbound.q"
		s := servertest.Start(t, servertest.Options{})
		stock(t, s.Engine, 0, 3)
		var log syncBuffer
		r, err := relay.New(relay.Config{Addr: s.RESPAddr(), AMQPURL: url, Exchange: exchange,
			Checkpoint: filepath.Join(t.TempDir(), "cp"), Block: 100 * time.Millisecond, ConfirmTimeout: 2 * time.Second,
			RetryPause: 100 * time.Millisecond, RetryPauseMax: 500 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(&log, nil))})
		if err != nil {
			t.Fatal(err)
		}
		stop := runRelay(t, r)
		defer stop()
		// The first round goes out at once; give the relay time to take
		// (wrongly) a confirm as delivery, or to say why not.
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) && r.Stats.Position.Load() == 0 && !strings.Contains(log.String(), "reached no queue") {
			time.Sleep(20 * time.Millisecond)
		}
		time.Sleep(time.Second)
		if pos := r.Stats.Position.Load(); pos != 0 {
			t.Fatalf("no queue is bound to %s, and the relay checkpointed seq %d: the broker dropped those events", exchange, pos)
		}
		text := log.String()
		for _, want := range []string{"reached no queue", "seq=1", "sku=sku0", "exchange=" + exchange, "--queue"} {
			if !strings.Contains(text, want) {
				t.Errorf("the log does not name %q:\n%s", want, text)
			}
		}
		if _, err := ch.QueueDeclare(queue, true, false, false, false, nil); err != nil {
			t.Fatal(err)
		}
		defer ch.QueueDelete(queue, false, false, false)
		if err := ch.QueueBind(queue, "#", exchange, false, nil); err != nil {
			t.Fatal(err)
		}
		waitPosition(t, r, 3)
		if n := checkConsumed(t, s.RESPAddr(), 1, 3, drain(t, ch, queue)); n != 0 {
			t.Errorf("%d repeats without the header resent", n)
		}
	})

	t.Run("queue deleted under the relay", func(t *testing.T) {
		const exchange, queue = "audit11.deleted", "audit11.deleted.q"
		s := servertest.Start(t, servertest.Options{})
		stock(t, s.Engine, 0, 1)
		var log syncBuffer
		r, err := relay.New(relay.Config{Addr: s.RESPAddr(), AMQPURL: url, Exchange: exchange, Queue: queue,
			Checkpoint: filepath.Join(t.TempDir(), "cp"), Block: 100 * time.Millisecond, ConfirmTimeout: 2 * time.Second,
			RetryPause: 100 * time.Millisecond, RetryPauseMax: 500 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(&log, nil))})
		if err != nil {
			t.Fatal(err)
		}
		stop := runRelay(t, r)
		defer stop()
		defer ch.QueueDelete(queue, false, false, false)
		waitPosition(t, r, 1)
		if _, err := ch.QueueDelete(queue, false, false, false); err != nil {
			t.Fatal(err)
		}
		stock(t, s.Engine, 1, 5)
		waitPosition(t, r, 6)
		// The queue again, as a consumer declares it; the relay's own
		// reconnect declares it too. Seq 1 went with the deleted queue.
		if _, err := ch.QueueDeclare(queue, true, false, false, false, nil); err != nil {
			t.Fatal(err)
		}
		if n := checkConsumed(t, s.RESPAddr(), 2, 6, drain(t, ch, queue)); n != 0 {
			t.Errorf("%d repeats without the header resent", n)
		}
		if !strings.Contains(log.String(), "reached no queue") || !strings.Contains(log.String(), "seq=2") {
			t.Errorf("the log does not say that seq 2 reached no queue:\n%s", log.String())
		}
	})
}

// runRelay runs r until the returned stop is called, which fails the test
// when Run returned an error or takes more than 10 s to return.
func runRelay(t *testing.T, r *relay.Relay) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	return func() {
		t.Helper()
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Error(err)
			}
		case <-time.After(10 * time.Second):
			t.Error("Run had not returned 10 s after its context was cancelled")
		}
	}
}
