package relay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
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
	// StatsEvery is how often Stats are logged, when they changed
	// (default 10s).
	StatsEvery time.Duration
	// Logger receives reconnects, failures, broker blocks and stats
	// (default: none).
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
	if _, err := amqp.ParseURI(c.AMQPURL); err != nil {
		return fmt.Errorf("relay: AMQP URL: %w", err)
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
	// Under a millisecond, CHANGES would get BLOCK 0 (the wait is sent in
	// milliseconds) and the relay would poll allot without waiting.
	if c.Block < time.Millisecond || c.Block > changes.BlockMax {
		return fmt.Errorf("relay: block %v is not in 1ms..%v", c.Block, changes.BlockMax)
	}
	if c.ConfirmTimeout == 0 {
		c.ConfirmTimeout = 30 * time.Second
	}
	if c.ConfirmTimeout < 0 {
		return fmt.Errorf("relay: confirm timeout %v is negative", c.ConfirmTimeout)
	}
	if c.RetryPause == 0 {
		c.RetryPause = 500 * time.Millisecond
	}
	if c.RetryPause < 0 {
		return fmt.Errorf("relay: retry pause %v is negative", c.RetryPause)
	}
	if c.StatsEvery == 0 {
		c.StatsEvery = 10 * time.Second
	}
	if c.StatsEvery < 0 {
		return fmt.Errorf("relay: stats interval %v is negative", c.StatsEvery)
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
	// Resent counts the messages published again after a failed round of
	// this process, each marked with the header resent: each is a possible
	// duplicate downstream. A round that failed before a message was
	// written counts nothing for it. It lives in memory: after a restart
	// (kill -9) the batch published again from the checkpoint is neither
	// counted nor marked.
	Resent atomic.Int64
	// Reconnects counts new broker connections after the first.
	Reconnects atomic.Int64
}

// Relay is one relay's state.
type Relay struct {
	cfg   Config
	Stats Stats

	nodes   []node        // allot's nodes, from Config.Addr
	cur     int           // the node read from
	refused map[int]error // nodes that refused the read after the checkpoint for good, since the last read
	link    *link         // the broker connection, nil when there is none
	// sentLast is the highest seq handed to the broker: a message of an
	// event up to it published again may be a repeat, and is marked so.
	sentLast uint64
	// dial opens the broker's TCP connections (nil: amqp.DefaultDial):
	// tests wrap it to make the network fail.
	dial func(network, addr string) (net.Conn, error)
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
	r := &Relay{cfg: cfg, refused: map[int]error{}}
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
// relay must stop: every node refused the read for good (see refused), so
// that no retry can go on from the checkpoint. A node that refuses may be
// alone in doing so (a node restored from a snapshot may refuse a cursor
// another node still serves; a standby may trail the node the checkpoint
// was read from), so one refusal only moves the relay on.
func (r *Relay) readFailed(pos uint64, err error) error {
	addr := r.nodes[r.cur].addr
	if refused(err) {
		r.refused[r.cur] = err
		if len(r.refused) == len(r.nodes) {
			return r.refusedEverywhere(pos)
		}
		r.cfg.Logger.Warn("relay: this node refuses to read after the checkpoint; trying the next", "addr", addr, "after", pos, "err", err)
	} else {
		r.cfg.Logger.Warn("relay: reading the change stream", "addr", addr, "after", pos, "err", err)
	}
	r.cur = (r.cur + 1) % len(r.nodes)
	return nil
}

// refused reports whether err is a refusal no retry at that node fixes: a
// checkpoint older than the node keeps (-TRIMMED), one past its newest seq,
// or a password it does not take.
func refused(err error) bool {
	var te *client.TrimmedError
	if errors.As(err, &te) {
		return true
	}
	if _, ok := pastNewest(err); ok {
		return true
	}
	var se *client.ServerError
	if errors.As(err, &se) {
		for _, p := range []string{"WRONGPASS", "NOAUTH", "ERR AUTH "} {
			if strings.HasPrefix(se.Msg, p) {
				return true
			}
		}
	}
	return false
}

// pastNewest returns the newest seq of a node that refused a cursor past
// it (a *client.FutureError).
func pastNewest(err error) (uint64, bool) {
	var fe *client.FutureError
	if !errors.As(err, &fe) {
		return 0, false
	}
	return fe.Newest, true
}

// refusedEverywhere is the error of a relay that every node refused.
func (r *Relay) refusedEverywhere(pos uint64) error {
	var trimmed *client.TrimmedError
	oldest := uint64(0)
	for _, err := range r.refused {
		var te *client.TrimmedError
		if !errors.As(err, &te) {
			trimmed = nil
			break
		}
		if trimmed == nil || te.Oldest < oldest {
			trimmed, oldest = te, te.Oldest
		}
	}
	if trimmed != nil {
		return fmt.Errorf("relay: checkpoint %d in %s is older than allot keeps (oldest seq %d): events %d..%d are gone; %w",
			pos, r.cfg.Checkpoint, oldest, pos+1, oldest-1, trimmed)
	}
	var errs []error
	for i, n := range r.nodes {
		err, ok := r.refused[i]
		if !ok {
			continue
		}
		if newest, ok := pastNewest(err); ok {
			err = fmt.Errorf("%s: checkpoint %d in %s is past the newest seq %d: it is another server's (or data dir's), or allot lost events it had served (or, listed alone, this node trails the one it was read from); relaying on would skip this server's events up to %d: %w",
				n.addr, pos, r.cfg.Checkpoint, newest, pos, err)
		} else {
			err = fmt.Errorf("%s: %w", n.addr, err)
		}
		errs = append(errs, err)
	}
	return fmt.Errorf("relay: allot refused to read after checkpoint %d: %w", pos, errors.Join(errs...))
}

// Run relays until ctx is done (it then returns nil) or a failure that no
// retry can fix: every node refusing the read (a checkpoint older than
// allot's journal keeps, a *client.TrimmedError; one past the newest seq; a
// wrong password), a checkpoint file that does not parse or cannot be
// written, a gap in the change stream (ErrGap), or the broker refusing the
// exchange or queue (see brokerRefused).
func (r *Relay) Run(ctx context.Context) error {
	defer r.closeBroker()
	defer r.closeNodes()
	pos, err := ReadCheckpoint(r.cfg.Checkpoint)
	if err != nil {
		return err
	}
	// Written back before anything is published: a checkpoint that cannot
	// be written stops the relay now, not after a batch that a restart
	// would send again.
	if err := WriteCheckpoint(r.cfg.Checkpoint, pos); err != nil {
		return err
	}
	r.Stats.Position.Store(pos)
	connected := false
	statsAt, statsLogged := time.Now(), r.Stats.snapshot()
	for ctx.Err() == nil {
		if now := time.Now(); now.Sub(statsAt) >= r.cfg.StatsEvery {
			if s := r.Stats.snapshot(); s != statsLogged {
				r.cfg.Logger.Info("relay: stats", s.attrs()...)
				statsLogged = s
			}
			statsAt = now
		}
		if r.link == nil {
			if err := r.connect(ctx); err != nil {
				var re *refusedError
				if errors.As(err, &re) {
					return fmt.Errorf("relay: the broker refused, and no retry fixes that: %w", re.err)
				}
				r.cfg.Logger.Warn("relay: connecting to the broker", "err", err)
				sleep(ctx, r.cfg.RetryPause)
				continue
			}
			if connected {
				n := r.Stats.Reconnects.Add(1)
				r.cfg.Logger.Info("relay: reconnected to the broker", "reconnects", n)
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
		clear(r.refused)
		if len(evs) == 0 {
			continue
		}
		if err := contiguous(pos, evs); err != nil {
			return fmt.Errorf("%w (read from %s)", err, r.nodes[r.cur].addr)
		}
		msgs, sent, err := r.publish(ctx, evs)
		r.sentLast = max(r.sentLast, sent)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var ue *unroutableError
			if errors.As(err, &ue) {
				r.cfg.Logger.Warn("relay: an event reached no queue, and the broker would have dropped it; bind a queue to the exchange for every routing key (or give the relay one to declare: Config.Queue, allot relay --queue). The checkpoint stays before it; sending the batch again",
					"seq", ue.seq, "sku", ue.key, "exchange", r.cfg.Exchange, "checkpoint", pos, "from", evs[0].Seq, "to", evs[len(evs)-1].Seq, "reply", ue.reply)
			} else {
				r.cfg.Logger.Warn("relay: batch not confirmed; reconnecting and sending it again", "from", evs[0].Seq, "to", evs[len(evs)-1].Seq, "err", err)
			}
			r.closeBroker()
			sleep(ctx, r.cfg.RetryPause)
			continue
		}
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

// link is one broker connection and its channel in confirm mode.
type link struct {
	raw     net.Conn // conn's socket
	conn    *amqp.Connection
	ch      *amqp.Channel
	closed  chan *amqp.Error // the channel's close, with the broker's reason
	returns chan amqp.Return // messages no queue took (published mandatory); at most pendingMax
	unwatch func() bool      // stops the close on the relay's context
	once    sync.Once
}

// close closes the connection, waiting at most about closeWait for the
// broker's close-ok. Connection.Close waits for ever, and a broker under a
// resource alarm (memory, disk) reads nothing more from a publisher's
// socket, so it never answers. CloseDeadline sets the deadline on the
// socket first, without a lock, so that a publish blocked in its write
// (which amqp091-go v1.10.0 does not bound by the publish's context) fails
// at it. That alone is not enough: amqp091-go pushes the read deadline
// back (3 heartbeats) on every frame the broker sends, and a blocked
// broker still sends heartbeats, so the close would end only at the next
// write of a heartbeat, up to a heartbeat interval later; closing the
// socket at closeWait ends it. Safe from any goroutine, and more than once.
func (l *link) close() {
	l.once.Do(func() {
		t := time.AfterFunc(closeWait, func() { l.raw.Close() })
		defer t.Stop()
		l.conn.CloseDeadline(time.Now().Add(closeWait))
	})
}

// closeWait bounds the wait for the broker's close-ok.
const closeWait = 5 * time.Second

// pendingMax bounds the messages of a round awaiting their confirms at
// once, and so the returns buffered in link.returns: amqp091-go hands a
// return to that channel on the connection's reader goroutine, which
// blocks (and with it every confirm) while the channel is full.
const pendingMax = 1024

// connect opens a connection and a channel in confirm mode, and declares
// the exchange (and queue). The connection is closed when ctx is done, so
// that no call on it outlives the relay's context.
func (r *Relay) connect(ctx context.Context) error {
	dial := r.dial
	if dial == nil {
		dial = amqp.DefaultDial(5 * time.Second)
	}
	var raw net.Conn
	conn, err := amqp.DialConfig(r.cfg.AMQPURL, amqp.Config{Dial: func(network, addr string) (net.Conn, error) {
		c, err := dial(network, addr)
		raw = c
		return c, err
	}})
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	l := &link{raw: raw, conn: conn}
	l.unwatch = context.AfterFunc(ctx, l.close)
	go r.logBlocked(conn.NotifyBlocked(make(chan amqp.Blocking, 2)))
	ch, err := conn.Channel()
	if err == nil {
		if err = ch.ExchangeDeclare(r.cfg.Exchange, "topic", true, false, false, false, nil); err != nil {
			err = fmt.Errorf("declare the durable topic exchange %q: %w", r.cfg.Exchange, err)
		}
	}
	if err == nil && r.cfg.Queue != "" {
		if _, err = ch.QueueDeclare(r.cfg.Queue, true, false, false, false, nil); err != nil {
			err = fmt.Errorf("declare the durable queue %q: %w", r.cfg.Queue, err)
		} else if err = ch.QueueBind(r.cfg.Queue, "#", r.cfg.Exchange, false, nil); err != nil {
			err = fmt.Errorf("bind the queue %q to %q: %w", r.cfg.Queue, r.cfg.Exchange, err)
		}
	}
	if err == nil {
		err = ch.Confirm(false)
	}
	if err != nil {
		l.unwatch()
		l.close()
		if brokerRefused(err) {
			return &refusedError{err}
		}
		return err
	}
	l.ch = ch
	l.closed = ch.NotifyClose(make(chan *amqp.Error, 1))
	l.returns = ch.NotifyReturn(make(chan amqp.Return, pendingMax))
	r.link = l
	return nil
}

// logBlocked logs the broker's connection.blocked and .unblocked until
// the connection closes (which closes blocked).
func (r *Relay) logBlocked(blocked <-chan amqp.Blocking) {
	for b := range blocked {
		if b.Active {
			r.cfg.Logger.Warn("relay: the broker blocks publishing (a resource alarm: memory or disk); rounds fail at the confirm timeout until it clears", "reason", b.Reason)
		} else {
			r.cfg.Logger.Info("relay: the broker unblocked publishing")
		}
	}
}

// refusedError is the broker's refusal of the relay's exchange or queue
// that no retry fixes.
type refusedError struct{ err error }

func (e *refusedError) Error() string { return e.err.Error() }

// brokerRefused reports whether err, the broker's answer to declaring the
// exchange or queue, is one no retry fixes: a name that exists with other
// settings (PRECONDITION_FAILED) or one the user may not use
// (ACCESS_REFUSED: the reserved "amq." prefix, no configure permission).
//
// A refused login is not taken as final: amqp091-go reports any failure
// of the handshake (a broker killed in the middle of one) as
// ErrCredentials or ErrVhost, so the relay cannot tell a wrong password
// from a broker restarting, and it retries, logging the error.
func brokerRefused(err error) bool {
	var ae *amqp.Error
	if !errors.As(err, &ae) {
		return false
	}
	return ae.Code == amqp.PreconditionFailed || ae.Code == amqp.AccessRefused
}

// closeReason names the broker's reason when err is a publish on a
// channel it closed (amqp.ErrClosed: "channel/connection is not open"):
// the close that says why (NOT_FOUND for an exchange deleted under the
// relay, say) reaches l.closed a moment after the channel is marked
// closed, so it is waited for briefly.
func (l *link) closeReason(err error) error {
	if !errors.Is(err, amqp.ErrClosed) {
		return err
	}
	select {
	case e, open := <-l.closed:
		if open && e != nil {
			return fmt.Errorf("the broker closed the channel: %w", e)
		}
	case <-time.After(closeReasonWait):
	}
	return err
}

// closeReasonWait bounds closeReason's wait for the broker's reason.
const closeReasonWait = 200 * time.Millisecond

func (r *Relay) closeBroker() {
	if r.link != nil {
		r.link.unwatch()
		r.link.close()
		r.link = nil
	}
}

// publish sends every event of the batch, mandatory, and waits for all
// the confirms. It returns the number of messages sent and the seq of the
// last event handed (in part, at least) to the broker.
//
// A message of an event up to r.sentLast is sent again: it carries the
// header resent and counts in Stats.Resent once it is handed over.
func (r *Relay) publish(ctx context.Context, evs []changes.Event) (msgs int, sent uint64, err error) {
	l := r.link
	cctx, cancel := context.WithTimeout(ctx, r.cfg.ConfirmTimeout)
	defer cancel()
	// amqp091-go v1.10.0 drops a publish's context: a publish blocked in
	// its write returns only when the connection closes. (stop runs before
	// cancel: a round that ends in time keeps its connection.)
	stop := context.AfterFunc(cctx, l.close)
	defer stop()
	pending := make([]pendingMessage, 0, min(len(evs), pendingMax))
	var body []byte
	var keys []string
	for i := range evs {
		ev := &evs[i]
		body = ev.AppendJSON(body[:0])
		keys = RoutingKeys(ev, keys[:0])
		resent := ev.Seq <= r.sentLast
		for _, key := range keys {
			if len(pending) == pendingMax {
				if err := l.confirmed(cctx, pending); err != nil {
					return 0, sent, err
				}
				msgs += len(pending)
				pending = pending[:0]
			}
			headers := amqp.Table{"seq": int64(ev.Seq)}
			if resent {
				headers["resent"] = true
			}
			dc, err := l.ch.PublishWithDeferredConfirmWithContext(cctx, r.cfg.Exchange, key, true, false, amqp.Publishing{
				ContentType:  "application/json",
				DeliveryMode: amqp.Persistent,
				MessageId:    strconv.FormatUint(ev.Seq, 10),
				Type:         ev.Op,
				Timestamp:    time.UnixMilli(ev.TimeMS),
				Headers:      headers,
				Body:         append([]byte(nil), body...),
			})
			if err != nil {
				return 0, sent, fmt.Errorf("publish seq %d: %w", ev.Seq, l.closeReason(err))
			}
			if resent {
				r.Stats.Resent.Add(1)
			}
			sent = ev.Seq
			pending = append(pending, pendingMessage{dc, ev.Seq})
		}
	}
	if err := l.confirmed(cctx, pending); err != nil {
		return 0, sent, err
	}
	return msgs + len(pending), sent, nil
}

// pendingMessage is a message published and not yet confirmed.
type pendingMessage struct {
	dc  *amqp.DeferredConfirmation
	seq uint64
}

// confirmed waits for the broker's confirm of every message of pending,
// and fails when one is nacked or was returned as routed to no queue.
//
// A message no queue takes is acked too. The broker sends its
// basic.return before its basic.ack, and amqp091-go reads a connection's
// frames on one goroutine that hands the return to l.returns (Channel.
// dispatch) before it reads the ack: once a message is acked, its return,
// if any, is in l.returns.
func (l *link) confirmed(ctx context.Context, pending []pendingMessage) error {
	for _, p := range pending {
		ok, err := p.dc.WaitContext(ctx)
		if err != nil {
			return fmt.Errorf("waiting for confirms: %w", err)
		}
		if !ok {
			// A closed channel fails every pending confirm; it tells its
			// close before (amqp091-go's Channel.shutdown).
			select {
			case e, open := <-l.closed:
				if open {
					return fmt.Errorf("the broker closed the channel before confirming seq %d: %w", p.seq, e)
				}
				return fmt.Errorf("the channel closed before the broker confirmed seq %d", p.seq)
			default:
				return fmt.Errorf("the broker nacked seq %d", p.seq)
			}
		}
	}
	select {
	case ret, open := <-l.returns:
		if open {
			seq, _ := strconv.ParseUint(ret.MessageId, 10, 64)
			return &unroutableError{seq: seq, key: ret.RoutingKey, exchange: ret.Exchange,
				reply: strconv.Itoa(int(ret.ReplyCode)) + " " + ret.ReplyText}
		}
	default:
	}
	return nil
}

// unroutableError is a message the broker returned: no queue is bound to
// the exchange for its routing key, and it would have been dropped.
type unroutableError struct {
	seq           uint64
	key, exchange string
	reply         string // the broker's code and text, e.g. "312 NO_ROUTE"
}

func (e *unroutableError) Error() string {
	return fmt.Sprintf("seq %d (routing key %q) reached no queue bound to exchange %q (returned: %s)", e.seq, e.key, e.exchange, e.reply)
}

// ErrGap is a batch of the change stream that does not follow the
// checkpoint seq by seq.
var ErrGap = errors.New("relay: a gap in the change stream")

// contiguous checks that evs are the events right after pos, seq by seq.
// allot's change stream is gapless, and the checkpoint becomes the last
// event's seq: an event missing from a batch would be skipped for good.
// A gap is a broken server (or something between), which no retry fixes.
func contiguous(pos uint64, evs []changes.Event) error {
	want := pos + 1
	for i := range evs {
		if evs[i].Seq != want {
			return fmt.Errorf("%w after checkpoint %d: expected seq %d, received seq %d; stopping rather than checkpoint past an event never published",
				ErrGap, pos, want, evs[i].Seq)
		}
		want++
	}
	return nil
}

// statsSnapshot is Stats at one moment, to log and to compare.
type statsSnapshot struct {
	position                             uint64
	events, messages, resent, reconnects int64
}

func (s *Stats) snapshot() statsSnapshot {
	return statsSnapshot{s.Position.Load(), s.Events.Load(), s.Messages.Load(), s.Resent.Load(), s.Reconnects.Load()}
}

func (s statsSnapshot) attrs() []any {
	return []any{"position", s.position, "events", s.events, "messages", s.messages, "resent", s.resent, "reconnects", s.reconnects}
}

// RoutingKeys appends the routing keys of ev: each SKU its rows touch,
// once, in row order; a catalog event's SKU (it touches no row); "_" for
// any other event that touches none (a confirm).
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
	if len(dst) == start && ev.SKU != "" {
		dst = append(dst, ev.SKU)
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
		if len(b) > 40 {
			b = append(b[:40:40], "..."...)
		}
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
