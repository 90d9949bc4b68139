package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"allot/relay"
)

func init() {
	register(command{
		name:    "relay",
		summary: "publish allot's change stream to a RabbitMQ exchange, at least once",
		run:     runRelay,
	})
}

const relayAbout = `Follows the change stream of an allot server (CHANGES over RESP) and
publishes every event to a RabbitMQ topic exchange, persistent, with
publisher confirms; routing key = each SKU the event's rows touch ("_" when
none). The seq of the last event the broker confirmed is kept in the
checkpoint file (written atomically), and a restart resumes after it: a
kill of the relay or of the broker loses no event, and may repeat some
(every message carries its seq: message id and header "seq"; a message
sent again after a failed round also carries header "resent"). A consumer
drops a message whose seq it already handled for that SKU, remembering
the seqs of the last --batch: not every seq below the last one, since a
resent message may arrive after a later one of its SKU.

Every message also names the server history its seq belongs to (header
"allot-history", kept in the checkpoint too): a consumer keeps what it
handled per history, since a rebuilt server numbers its events from 1
again. The relay refuses a server whose event at the checkpoint's seq is
not the one it relayed (another history); move the checkpoint away to
relay that server from its start.

Messages are published mandatory: one that reaches no queue comes back,
and the relay keeps its checkpoint before it, logs its seq and SKU, and
sends the batch again until a queue is bound to the exchange (--queue
declares one bound to every routing key). Stats are logged every 10 s
when they change.

With the servers of 'allot services up rabbitmq' and 'allot serve':
  allot relay --queue allot.changes.all

For a cluster shard, name its nodes: every node serves the change stream
with the same seqs, and the relay moves to the next node when a read fails
(a dead node, or one that no longer keeps the checkpoint's events):
  allot relay --addr 10.0.0.1:7379,10.0.0.2:7379,10.0.0.3:7379

It retries what may pass (a node or the broker down, a nack, a lost
connection, a broker resource alarm, an event no queue takes, a broker
that does not answer the handshake or a declaration within 10 s), after a
pause that doubles from 0.5 s to 30 s with each failure in a row (half of
it random) and starts over after a success. It stops with an error, exit
1, on what no retry fixes: every node refuses the read (a checkpoint older
than allot keeps, past its newest seq, or of another history, as another
server's checkpoint would be; a wrong --password), a checkpoint file that
cannot be read or written, a gap in the change stream (naming the seq
expected and the one received), or the broker refusing the exchange or
queue (declared elsewhere with other settings). A refused broker login is
logged and retried. SIGTERM stops it within about 5 s, even when the
broker reads nothing more (a resource alarm).`

// relayAMQPDefault is the RabbitMQ of 'allot services up rabbitmq'.
const relayAMQPDefault = "amqp://guest:guest@127.0.0.1:14672/"

func runRelay(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("relay", "[flags]", relayAbout, stderr)
	cfg := relay.Config{}
	ef := &envFlags{fs: fs}
	fs.StringVar(&cfg.Addr, "addr", envOr("ALLOT_RELAY_ADDR", "127.0.0.1:7379"), "allot server's RESP address, or a comma-separated list of the nodes of one cluster shard: read from one, moving to the next when a read fails (env ALLOT_RELAY_ADDR)")
	// The password is read from the environment after parsing, so that
	// --help does not print it as the flag's default.
	ef.secret(&cfg.Password, "password", "ALLOT_PASSWORD", "allot server's password")
	// As the password: a URL from the environment may carry one.
	ef.secret(&cfg.AMQPURL, "amqp", "ALLOT_RELAY_AMQP", "RabbitMQ URL; the default is the node of 'allot services up rabbitmq', "+relayAMQPDefault)
	fs.StringVar(&cfg.Exchange, "exchange", "allot.changes", "topic exchange to publish to (declared durable)")
	fs.StringVar(&cfg.Queue, "queue", "", "also declare this durable queue (again on every reconnect), bound to every routing key; without it (or another queue bound for every routing key), events come back unroutable and the relay retries them without moving its checkpoint")
	fs.StringVar(&cfg.Checkpoint, "checkpoint", "relay.checkpoint", "file holding the seq of the last confirmed event, its history and fingerprint")
	fs.IntVar(&cfg.BatchMax, "batch", 500, "events per read and confirm round (1..10000)")
	fs.DurationVar(&cfg.Block, "block", time.Second, "how long one read waits for new events (1ms..60s)")
	fs.DurationVar(&cfg.ConfirmTimeout, "confirm-timeout", 30*time.Second, "how long to wait for a batch's confirms before sending it again (> 0)")
	if err := parseFlags(fs, args, stdout); err != nil {
		return err
	}
	for _, apply := range ef.secrets {
		apply()
	}
	if _, fromEnv := os.LookupEnv("ALLOT_RELAY_AMQP"); !ef.given("amqp") && !fromEnv {
		cfg.AMQPURL = relayAMQPDefault
	}
	// relay.Config takes a zero for its default (the Go API's way); here
	// the flags carry the defaults, so a zero was asked for, and replacing
	// it silently by the default would ignore the flag.
	switch {
	case cfg.Exchange == "":
		return &exitError{code: 2, msg: "--exchange is empty: name the topic exchange to publish to (the broker's default exchange cannot be declared)"}
	case cfg.BatchMax == 0:
		return &exitError{code: 2, msg: "--batch 0 is not in 1..10000"}
	case cfg.Block == 0:
		return &exitError{code: 2, msg: "--block 0s: the relay would poll allot without waiting; give 1ms..60s"}
	case cfg.ConfirmTimeout == 0:
		return &exitError{code: 2, msg: "--confirm-timeout 0s: no confirm could arrive in time; give a positive duration"}
	}
	if err := cfg.Validate(); err != nil {
		return &exitError{code: 2, msg: err.Error()}
	}
	cfg.Logger = slog.New(slog.NewTextHandler(stderr, nil))
	r, err := relay.New(cfg)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	cfg.Logger.Info("relay: started", "addr", cfg.Addr, "exchange", cfg.Exchange, "checkpoint", cfg.Checkpoint)
	err = r.Run(ctx)
	cfg.Logger.Info("relay: stopped", "position", r.Stats.Position.Load(), "events", r.Stats.Events.Load(),
		"messages", r.Stats.Messages.Load(), "resent", r.Stats.Resent.Load(), "reconnects", r.Stats.Reconnects.Load())
	return err
}

// envOr returns the environment variable name, or def when it is unset.
func envOr(name, def string) string {
	if v, ok := os.LookupEnv(name); ok {
		return v
	}
	return def
}
