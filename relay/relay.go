package relay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"allot/changes"
	"allot/client"
	"allot/vfs"
)

// Config configures a relay.
type Config struct {
	// Addr is allot's RESP address, or a comma-separated list of the
	// nodes of one shard (a cluster's primary and standbys: every one
	// serves the change stream, with the same seqs). The relay reads from
	// one node and moves to the next when a read fails, so that a node
	// that dies does not stop the stream. Password is its password, if
	// any.
	Addr     string
	Password string
	// AMQPURL is the broker, e.g. amqp://guest:guest@127.0.0.1:14672/.
	AMQPURL string
	// Exchange is the topic exchange events go to (declared durable;
	// default "allot.changes").
	Exchange string
	// Queue, when set, is a durable queue declared and bound to the
	// exchange for every routing key ("#").
	Queue string
	// Checkpoint is the file holding the seq of the last confirmed event.
	Checkpoint string
	// BatchMax is the most events read and published per confirm round
	// (default 500, at most changes.CountMax).
	BatchMax int
	// Block is how long one read waits for a new event (default 1s).
	Block time.Duration
	// ConfirmTimeout bounds the wait for a batch's confirms (default 30s).
	ConfirmTimeout time.Duration
	// RetryPause is the pause before reconnecting (default 500ms).
	RetryPause time.Duration
	// Logger receives reconnects and failures (default: none).
	Logger *slog.Logger
}

// Validate fills defaults and checks the fields.
func (c *Config) Validate() error {
	if c.Addr == "" {
		return errors.New("relay: no allot address")
	}
	for _, a := range strings.Split(c.Addr, ",") {
		if strings.TrimSpace(a) == "" {
			return fmt.Errorf("relay: an empty address in the list %q", c.Addr)
		}
	}
	if c.AMQPURL == "" {
		return errors.New("relay: no AMQP URL")
	}
	if c.Checkpoint == "" {
		return errors.New("relay: no checkpoint file")
	}
	if c.Exchange == "" {
		c.Exchange = "allot.changes"
	}
	if c.BatchMax == 0 {
		c.BatchMax = 500
	}
	if c.BatchMax < 1 || c.BatchMax > changes.CountMax {
		return fmt.Errorf("relay: batch size %d is not in 1..%d", c.BatchMax, changes.CountMax)
	}
	if c.Block == 0 {
		c.Block = time.Second
	}
	if c.Block < 0 || c.Block > changes.BlockMax {
		return fmt.Errorf("relay: block %v is not in 0..%v", c.Block, changes.BlockMax)
	}
	if c.ConfirmTimeout == 0 {
		c.ConfirmTimeout = 30 * time.Second
	}
	if c.RetryPause == 0 {
		c.RetryPause = 500 * time.Millisecond
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// Stats counts what a relay did since it started.
type Stats struct {
	// Position is the checkpointed seq.
	Position atomic.Uint64
	// Events and Messages published and confirmed (an event touching k
	// SKUs is k messages).
	Events   atomic.Int64
	Messages atomic.Int64
	// Resent counts events published again after a failed round: each is
	// a possible duplicate downstream.
	Resent atomic.Int64
	// Reconnects counts new broker connections after the first.
	Reconnects atomic.Int64
}

// Relay is one relay's state.
type Relay struct {
	cfg   Config
	Stats Stats

	nodes   []node // allot's nodes, from Config.Addr
	cur     int    // the node read from
	trimmed map[int]uint64
	conn    *amqp.Connection
	ch      *amqp.Channel
}

// node is one allot server the relay may read from.
type node struct {
	addr string
	cl   *client.Client
}

// New returns a relay; Run starts it.
func New(cfg Config) (*Relay, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	r := &Relay{cfg: cfg, trimmed: map[int]uint64{}}
	for _, addr := range strings.Split(cfg.Addr, ",") {
		addr = strings.TrimSpace(addr)
		cl, err := client.New(client.Config{Addr: addr, Password: cfg.Password, PoolSize: 1})
		if err != nil {
			r.closeNodes()
			return nil, fmt.Errorf("relay: %s: %w", addr, err)
		}
		r.nodes = append(r.nodes, node{addr: addr, cl: cl})
	}
	return r, nil
}

func (r *Relay) closeNodes() {
	for _, n := range r.nodes {
		n.cl.Close()
	}
}

// readFailed takes a failed read of the change stream after pos from the
// current node and moves to the next one. It returns an error when the
// relay must stop: every node refused pos as trimmed, so the events after
// it are gone (a node restored from a snapshot may refuse a cursor another
// node still serves).
func (r *Relay) readFailed(pos uint64, err error) error {
	addr := r.nodes[r.cur].addr
	var te *client.TrimmedError
	if errors.As(err, &te) {
		r.trimmed[r.cur] = te.Oldest
		if len(r.trimmed) == len(r.nodes) {
			oldest := te.Oldest
			for _, o := range r.trimmed {
				oldest = min(oldest, o)
			}
			return fmt.Errorf("relay: checkpoint %d in %s is older than allot keeps (oldest seq %d): events %d..%d are gone; %w",
				pos, r.cfg.Checkpoint, oldest, pos+1, oldest-1, err)
		}
		r.cfg.Logger.Warn("relay: this node no longer keeps the events after the checkpoint; trying the next", "addr", addr, "after", pos, "oldest", te.Oldest)
	} else {
		r.cfg.Logger.Warn("relay: reading the change stream", "addr", addr, "after", pos, "err", err)
	}
	r.cur = (r.cur + 1) % len(r.nodes)
	return nil
}

// Run relays until ctx is done (it then returns nil) or a failure that no
// retry can fix: a checkpoint older than allot's journal keeps on every
// node (a *client.TrimmedError), or a checkpoint file that does not parse.
func (r *Relay) Run(ctx context.Context) error {
	defer r.closeBroker()
	defer r.closeNodes()
	pos, err := ReadCheckpoint(r.cfg.Checkpoint)
	if err != nil {
		return err
	}
	r.Stats.Position.Store(pos)
	failed := false // the last round failed: its events go again
	connected := false
	for ctx.Err() == nil {
		if r.ch == nil {
			if err := r.connect(); err != nil {
				r.cfg.Logger.Warn("relay: broker unreachable", "err", err)
				sleep(ctx, r.cfg.RetryPause)
				continue
			}
			if connected {
				r.Stats.Reconnects.Add(1)
			}
			connected = true
		}
		rctx, cancel := context.WithTimeout(ctx, r.cfg.Block+10*time.Second)
		evs, err := r.nodes[r.cur].cl.Changes(rctx, pos, r.cfg.BatchMax, r.cfg.Block)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if err := r.readFailed(pos, err); err != nil {
				return err
			}
			sleep(ctx, r.cfg.RetryPause)
			continue
		}
		clear(r.trimmed)
		if len(evs) == 0 {
			continue
		}
		if failed {
			r.Stats.Resent.Add(int64(len(evs)))
		}
		msgs, err := r.publish(ctx, evs)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			r.cfg.Logger.Warn("relay: batch not confirmed; reconnecting and sending it again", "from", evs[0].Seq, "to", evs[len(evs)-1].Seq, "err", err)
			failed = true
			r.closeBroker()
			sleep(ctx, r.cfg.RetryPause)
			continue
		}
		failed = false
		last := evs[len(evs)-1].Seq
		if err := WriteCheckpoint(r.cfg.Checkpoint, last); err != nil {
			return err
		}
		pos = last
		r.Stats.Position.Store(pos)
		r.Stats.Events.Add(int64(len(evs)))
		r.Stats.Messages.Add(int64(msgs))
	}
	return nil
}

// connect opens a connection and a channel in confirm mode, and declares
// the exchange (and queue).
func (r *Relay) connect() error {
	conn, err := amqp.DialConfig(r.cfg.AMQPURL, amqp.Config{Dial: amqp.DefaultDial(5 * time.Second)})
	if err != nil {
		return err
	}
	ch, err := conn.Channel()
	if err == nil {
		err = ch.ExchangeDeclare(r.cfg.Exchange, "topic", true, false, false, false, nil)
	}
	if err == nil && r.cfg.Queue != "" {
		if _, err = ch.QueueDeclare(r.cfg.Queue, true, false, false, false, nil); err == nil {
			err = ch.QueueBind(r.cfg.Queue, "#", r.cfg.Exchange, false, nil)
		}
	}
	if err == nil {
		err = ch.Confirm(false)
	}
	if err != nil {
		conn.Close()
		return err
	}
	r.conn, r.ch = conn, ch
	return nil
}

func (r *Relay) closeBroker() {
	if r.conn != nil {
		r.conn.Close()
	}
	r.conn, r.ch = nil, nil
}

// publish sends every event of the batch and waits for all the confirms.
// It returns the number of messages sent.
func (r *Relay) publish(ctx context.Context, evs []changes.Event) (int, error) {
	cctx, cancel := context.WithTimeout(ctx, r.cfg.ConfirmTimeout)
	defer cancel()
	pending := make([]*amqp.DeferredConfirmation, 0, len(evs))
	var body []byte
	var keys []string
	for i := range evs {
		ev := &evs[i]
		body = ev.AppendJSON(body[:0])
		keys = RoutingKeys(ev, keys[:0])
		for _, key := range keys {
			dc, err := r.ch.PublishWithDeferredConfirmWithContext(cctx, r.cfg.Exchange, key, false, false, amqp.Publishing{
				ContentType:  "application/json",
				DeliveryMode: amqp.Persistent,
				MessageId:    strconv.FormatUint(ev.Seq, 10),
				Type:         ev.Op,
				Timestamp:    time.UnixMilli(ev.TimeMS),
				Headers:      amqp.Table{"seq": int64(ev.Seq)},
				Body:         append([]byte(nil), body...),
			})
			if err != nil {
				return 0, fmt.Errorf("publish seq %d: %w", ev.Seq, err)
			}
			pending = append(pending, dc)
		}
	}
	for _, dc := range pending {
		ok, err := dc.WaitContext(cctx)
		if err != nil {
			return 0, fmt.Errorf("waiting for confirms: %w", err)
		}
		if !ok {
			return 0, errors.New("the broker nacked a message (or the channel closed)")
		}
	}
	return len(pending), nil
}

// RoutingKeys appends the routing keys of ev: each SKU its rows touch,
// once, in row order; "_" when it touches none.
func RoutingKeys(ev *changes.Event, dst []string) []string {
	start := len(dst)
	for i := range ev.Rows {
		sku := ev.Rows[i].SKU
		dup := false
		for _, k := range dst[start:] {
			if k == sku {
				dup = true
				break
			}
		}
		if !dup {
			dst = append(dst, sku)
		}
	}
	if len(dst) == start {
		dst = append(dst, "_")
	}
	return dst
}

// ReadCheckpoint returns the seq in the checkpoint file, 0 when the file
// does not exist.
func ReadCheckpoint(name string) (uint64, error) {
	b, err := os.ReadFile(name)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("relay: read checkpoint: %w", err)
	}
	seq, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 63)
	if err != nil {
		return 0, fmt.Errorf("relay: checkpoint %s does not hold a seq: %q", name, b)
	}
	return seq, nil
}

// WriteCheckpoint replaces the checkpoint file with seq, durably: a
// temporary file, fsync, rename, fsync of the directory. A crash leaves
// the old value or the new one, never a torn file.
func WriteCheckpoint(name string, seq uint64) error {
	if err := vfs.WriteFileAtomic(vfs.OS{}, name, []byte(strconv.FormatUint(seq, 10)+"\n")); err != nil {
		return fmt.Errorf("relay: checkpoint %s: %w", name, err)
	}
	return nil
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
