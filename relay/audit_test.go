package relay_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"allot/engine"
	"allot/internal/syncbuf"
	"allot/inventory"
	"allot/relay"
	"allot/server"
	"allot/server/servertest"
	"allot/services"
	"allot/services/servicestest"
)

// sharedAMQP returns the URL of the shared RabbitMQ node ('allot services
// up rabbitmq'). Tests on it use exchanges and queues of their own and
// never kill it.
func sharedAMQP(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("needs RabbitMQ")
	}
	servicestest.Require(t, services.RabbitMQ)
	addr, err := services.Addr(services.Config{}, services.RabbitMQ)
	if err != nil {
		t.Fatal(err)
	}
	return "amqp://guest:guest@" + addr + "/"
}

// auditName is a broker name of this test alone.
func auditName(t *testing.T) string {
	return fmt.Sprintf("audit.%s.%d", t.Name(), time.Now().UnixNano())
}

// broker opens a channel of the test's own, deleting the exchange and
// queue named name at the end.
func broker(t *testing.T, url, name string) *amqp.Channel {
	t.Helper()
	conn, err := amqp.Dial(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if ch, err := conn.Channel(); err == nil {
			ch.ExchangeDelete(name, false, false)
			ch.QueueDelete(name, false, false, false)
		}
		conn.Close()
	})
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// stock applies n STOCK.SETs, n events.
func stock(t *testing.T, e *engine.Engine, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		k := inventory.RowKey{SKU: "sku" + strconv.Itoa(i%3), Warehouse: "w", Condition: "new", Source: "own"}
		if _, err := e.Stock(k, int64(i+1), 100); err != nil {
			t.Fatal(err)
		}
	}
}

// runFor runs r for at most d and returns Run's error (nil when d ran out
// first, as when the relay goes on forever).
func runFor(r *relay.Relay, d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return r.Run(ctx)
}

// A checkpoint past the newest seq allot has (one from another server or
// data dir, or one that allot lost events after serving) is an error that
// stops the relay. Waiting would skip, silently, every event of this
// server up to the checkpoint once its seqs got there.
func TestRelayAuditCheckpointPastNewestStops(t *testing.T) {
	url := sharedAMQP(t)
	name := auditName(t)
	broker(t, url, name)
	s := servertest.Start(t, servertest.Options{})
	stock(t, s.Engine, 0, 3)
	cp := filepath.Join(t.TempDir(), "cp")
	if err := relay.WriteCheckpoint(cp, 1000); err != nil {
		t.Fatal(err)
	}
	r, err := relay.New(relay.Config{Addr: s.RESPAddr(), AMQPURL: url, Exchange: name, Queue: name, Checkpoint: cp,
		Block: 100 * time.Millisecond, RetryPause: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	err = runFor(r, 5*time.Second)
	if err == nil || !strings.Contains(err.Error(), "1000") || !strings.Contains(err.Error(), "newest seq 3") {
		t.Fatalf("checkpoint 1000 on a server at seq 3: Run returned %v; want an error naming both", err)
	}
	t.Log(err)
	if cp, _ := relay.ReadCheckpoint(cp); cp != 1000 {
		t.Errorf("the checkpoint changed to %d", cp)
	}
}

// An exchange (or queue) that exists with other settings is refused by
// the broker for good (PRECONDITION_FAILED): the relay stops, naming it,
// rather than retrying forever as if the broker were unreachable.
func TestRelayAuditExchangeWithOtherSettingsStops(t *testing.T) {
	url := sharedAMQP(t)
	s := servertest.Start(t, servertest.Options{})
	stock(t, s.Engine, 0, 3)
	for _, tc := range []struct {
		what    string
		declare func(ch *amqp.Channel, name string) error
	}{
		{"a fanout exchange", func(ch *amqp.Channel, name string) error {
			return ch.ExchangeDeclare(name, "fanout", true, false, false, false, nil)
		}},
		{"a transient exchange", func(ch *amqp.Channel, name string) error {
			return ch.ExchangeDeclare(name, "topic", false, false, false, false, nil)
		}},
		{"a queue with a length limit", func(ch *amqp.Channel, name string) error {
			_, err := ch.QueueDeclare(name, true, false, false, false, amqp.Table{"x-max-length": int32(5)})
			return err
		}},
	} {
		t.Run(tc.what, func(t *testing.T) {
			name := auditName(t)
			if err := tc.declare(broker(t, url, name), name); err != nil {
				t.Fatal(err)
			}
			var log bytes.Buffer
			r, err := relay.New(relay.Config{Addr: s.RESPAddr(), AMQPURL: url, Exchange: name, Queue: name,
				Checkpoint: filepath.Join(t.TempDir(), "cp"), RetryPause: 50 * time.Millisecond,
				Logger: slog.New(slog.NewTextHandler(&log, nil))})
			if err != nil {
				t.Fatal(err)
			}
			err = runFor(r, 3*time.Second)
			if err == nil || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "PRECONDITION_FAILED") {
				first, _, _ := strings.Cut(log.String(), "\n")
				t.Fatalf("Run returned %v; want an error naming %q and the broker's refusal (first log line: %s)", err, name, first)
			}
			t.Log(err)
		})
	}
}

// An AMQP URL that does not parse is a bad input: New says so, rather
// than a relay that retries forever.
func TestRelayAuditBadAMQPURL(t *testing.T) {
	for _, url := range []string{"127.0.0.1:14672", "http://127.0.0.1:14672/", "amqp://guest:guest@127.0.0.1:notaport/"} {
		_, err := relay.New(relay.Config{Addr: "127.0.0.1:7379", AMQPURL: url, Checkpoint: "cp"})
		if err == nil || !strings.Contains(err.Error(), "AMQP URL") {
			t.Errorf("AMQP URL %q: New returned %v; want an error naming the URL", url, err)
		}
	}
}

// A negative duration is no default: it is refused (a negative confirm
// timeout would fail every round, and the relay would resend forever).
func TestRelayAuditNegativeDurations(t *testing.T) {
	for name, cfg := range map[string]relay.Config{
		"confirm timeout": {ConfirmTimeout: -time.Second},
		"retry pause":     {RetryPause: -time.Second},
	} {
		cfg.Addr, cfg.AMQPURL, cfg.Checkpoint = "127.0.0.1:7379", "amqp://127.0.0.1:14672/", "cp"
		if _, err := relay.New(cfg); err == nil {
			t.Errorf("a negative %s was accepted", name)
		}
	}
}

// Resent counts the events that may reach the exchange twice. A broker
// connection that died while the relay was idle takes no message with it:
// the events published after the reconnect are no repeat, and the queue
// holds each once.
func TestRelayAuditResentCountsOnlyRepublished(t *testing.T) {
	url := sharedAMQP(t)
	name := auditName(t)
	ch := broker(t, url, name)
	addr, _ := services.Addr(services.Config{}, services.RabbitMQ)
	p := servertest.StartCutProxy(t, addr)
	s := servertest.Start(t, servertest.Options{})
	stock(t, s.Engine, 0, 1)
	cp := filepath.Join(t.TempDir(), "cp")
	r, err := relay.New(relay.Config{Addr: s.RESPAddr(), AMQPURL: "amqp://guest:guest@" + p.Addr() + "/", Exchange: name, Queue: name,
		Checkpoint: cp, Block: 100 * time.Millisecond, RetryPause: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	waitPosition(t, r, 1)
	p.Cut()
	time.Sleep(300 * time.Millisecond)
	stock(t, s.Engine, 1, 20)
	waitPosition(t, r, 21)
	if n := r.Stats.Reconnects.Load(); n != 1 {
		t.Errorf("%d reconnects, want 1", n)
	}
	got := 0
	for {
		_, ok, err := ch.Get(name, true)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		got++
	}
	if got != 21 {
		t.Errorf("the queue holds %d messages, want 21", got)
	}
	if n := r.Stats.Resent.Load(); n != int64(got-21) {
		t.Errorf("Resent is %d; the queue holds %d repeats", n, got-21)
	}
}

func waitPosition(t *testing.T, r *relay.Relay, pos uint64) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for r.Stats.Position.Load() < pos {
		if time.Now().After(deadline) {
			t.Fatalf("the relay is at %d after 20 s, want %d", r.Stats.Position.Load(), pos)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A wrong allot password is refused by every node for good: the relay
// stops, naming it, rather than retrying forever.
func TestRelayAuditWrongPasswordStops(t *testing.T) {
	url := sharedAMQP(t)
	name := auditName(t)
	broker(t, url, name)
	s := servertest.Start(t, servertest.Options{Config: server.Config{Password: "right"}})
	r, err := relay.New(relay.Config{Addr: s.RESPAddr(), Password: "wrong", AMQPURL: url, Exchange: name, Queue: name,
		Checkpoint: filepath.Join(t.TempDir(), "cp"), RetryPause: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	err = runFor(r, 3*time.Second)
	if err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
		t.Fatalf("a wrong password: Run returned %v; want an error naming the refusal", err)
	}
	t.Log(err)
	if errors.Is(err, context.DeadlineExceeded) {
		t.Fatal(err)
	}
}

// A channel the broker closes under a batch (here: the exchange deleted
// while the relay runs, NOT_FOUND) is told apart from a nack, with the
// broker's reason, in the relay's log; the relay declares the exchange
// again and the queue gets every event.
func TestRelayAuditChannelClosedIsNamed(t *testing.T) {
	url := sharedAMQP(t)
	name := auditName(t)
	ch := broker(t, url, name)
	s := servertest.Start(t, servertest.Options{})
	stock(t, s.Engine, 0, 1)
	var log syncBuffer
	r, err := relay.New(relay.Config{Addr: s.RESPAddr(), AMQPURL: url, Exchange: name, Queue: name,
		Checkpoint: filepath.Join(t.TempDir(), "cp"), Block: 100 * time.Millisecond, RetryPause: 50 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	waitPosition(t, r, 1)
	if err := ch.ExchangeDelete(name, false, false); err != nil {
		t.Fatal(err)
	}
	stock(t, s.Engine, 1, 5)
	waitPosition(t, r, 6)
	t.Log(log.String())
	if !strings.Contains(log.String(), "NOT_FOUND") {
		t.Errorf("the log does not name the broker's reason for closing the channel:\n%s", log.String())
	}
	seqs := map[string]bool{}
	for {
		d, ok, err := ch.Get(name, true)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		seqs[d.MessageId] = true
	}
	if len(seqs) != 6 {
		t.Errorf("the queue holds %d of the 6 events: %v", len(seqs), seqs)
	}
}

// syncBuffer is a bytes.Buffer safe for a logger and a test at once.
type syncBuffer = syncbuf.Buffer

// A checkpoint that cannot be written (its directory is missing) is found
// before anything is published: the relay stops, naming it, with nothing
// sent that a restart would send again without counting it.
func TestRelayAuditUnwritableCheckpointStopsFirst(t *testing.T) {
	url := sharedAMQP(t)
	name := auditName(t)
	ch := broker(t, url, name)
	if _, err := ch.QueueDeclare(name, true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	s := servertest.Start(t, servertest.Options{})
	stock(t, s.Engine, 0, 3)
	cp := filepath.Join(t.TempDir(), "missing", "cp")
	r, err := relay.New(relay.Config{Addr: s.RESPAddr(), AMQPURL: url, Exchange: name, Queue: name, Checkpoint: cp,
		Block: 100 * time.Millisecond, RetryPause: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	err = runFor(r, 5*time.Second)
	if err == nil || !strings.Contains(err.Error(), cp) {
		t.Fatalf("Run returned %v; want an error naming %s", err, cp)
	}
	q, err := ch.QueueDeclarePassive(name, true, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if q.Messages != 0 {
		t.Errorf("%d messages published before the relay found it cannot checkpoint", q.Messages)
	}
}
