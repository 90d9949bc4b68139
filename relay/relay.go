package relay

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
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
	// RetryPause is the pause after a failure (broker or change stream)
	// before the relay tries again (default 500ms); each further failure
	// in a row doubles it, up to RetryPauseMax (default 30s, and never
	// below RetryPause), and a success starts it over. Half of each pause
	// is drawn at random (see backoff).
	RetryPause    time.Duration
	RetryPauseMax time.Duration
	// ConnectTimeout bounds the broker's TCP connect, then its AMQP
	// handshake, then the setup of the channel: opening it, declaring the
	// exchange and queue, binding, confirm mode (default 10s each).
	ConnectTimeout time.Duration
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
	if c.RetryPauseMax == 0 {
		c.RetryPauseMax = max(30*time.Second, c.RetryPause)
	}
	if c.RetryPauseMax < c.RetryPause {
		return fmt.Errorf("relay: retry pause max %v is below the retry pause %v", c.RetryPauseMax, c.RetryPause)
	}
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = 10 * time.Second
	}
	if c.ConnectTimeout < 0 {
		return fmt.Errorf("relay: connect timeout %v is negative", c.ConnectTimeout)
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

	broker  string        // the broker's host:port, from Config.AMQPURL (for errors: the URL holds the password)
	retry   backoff       // the pause after a failure
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
	// sleep waits out a retry pause and rand draws its jitter (nil: the
	// clock and math/rand): tests record the schedule.
	sleep func(ctx context.Context, d time.Duration)
	rand  func() float64
	// broken, when set, changes the events of a round before they are
	// published (never the checkpoint): tests make a broken relay with it
	// to prove that their delivery check catches one.
	broken func([]changes.Event) []changes.Event
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
	uri, err := amqp.ParseURI(cfg.AMQPURL)
	if err != nil {
		return nil, fmt.Errorf("relay: AMQP URL: %w", err)
	}
	r := &Relay{cfg: cfg, refused: map[int]error{}, broker: net.JoinHostPort(uri.Host, strconv.Itoa(uri.Port)),
		retry: backoff{first: cfg.RetryPause, max: cfg.RetryPauseMax}}
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
// one of another history (*HistoryError), or a password it does not take.
func refused(err error) bool {
	var te *client.TrimmedError
	var he *HistoryError
	if errors.As(err, &te) || errors.As(err, &he) {
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
// allot's journal keeps, a *client.TrimmedError; one past the newest seq;
// one of another history, a *HistoryError; a wrong password), a
// checkpoint file that does not parse or cannot be written, a gap in the
// change stream (ErrGap), or the broker refusing the exchange or queue
// (see brokerRefused).
func (r *Relay) Run(ctx context.Context) error {
	defer r.closeBroker()
	defer r.closeNodes()
	cp, err := LoadCheckpoint(r.cfg.Checkpoint)
	if err != nil {
		return err
	}
	// Written back before anything is published: a checkpoint that cannot
	// be written stops the relay now, not after a batch that a restart
	// would send again.
	if err := cp.Save(r.cfg.Checkpoint); err != nil {
		return err
	}
	r.Stats.Position.Store(cp.Seq)
	// checked: the event at the checkpoint's seq was found to be the one
	// relayed (readChecked), on the node read from, with no failure and no
	// round since. Anything between two reads (a round, a failure, a
	// pause) may hide a server replaced under the same address, which the
	// client's pool would reconnect to without a word.
	checked := false
	// history is the history of the events read after the checkpoint, as
	// readChecked found it: the checkpoint's own, or, for a checkpoint
	// that names none, the one of the node read. It is set by every
	// readChecked, and so holds while checked. Empty, a round names the
	// history after its first event. cp keeps the checkpoint file's
	// content: a name found by a read becomes cp's only with the save
	// after the broker confirmed a round under it. A round that failed
	// binds the relay to no history, then: its next read (perhaps from
	// another node, or from a server rebuilt under the same address)
	// names its own, as a restart from the file would.
	history := ""
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
				checked = false
				r.pause(ctx)
				continue
			}
			if connected {
				n := r.Stats.Reconnects.Add(1)
				r.cfg.Logger.Info("relay: reconnected to the broker", "reconnects", n)
			}
			connected = true
		}
		var evs []changes.Event
		if checked || cp.Seq == 0 {
			evs, err = r.read(ctx, cp.Seq, r.cfg.BatchMax, r.cfg.Block)
		} else {
			evs, history, err = r.readChecked(ctx, cp)
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if errors.Is(err, ErrGap) {
				return fmt.Errorf("%w (read from %s)", err, r.nodes[r.cur].addr)
			}
			if err := r.readFailed(cp.Seq, err); err != nil {
				return err
			}
			checked = false
			r.pause(ctx)
			continue
		}
		checked = true
		clear(r.refused)
		if len(evs) == 0 {
			// allot answered, and the broker is connected: all is well.
			r.retry.reset()
			continue
		}
		if err := contiguous(cp.Seq, evs); err != nil {
			return fmt.Errorf("%w (read from %s)", err, r.nodes[r.cur].addr)
		}
		// The round's history, not cp's (see history).
		round := history
		if round == "" {
			round = historyAt(&evs[0])
		}
		msgs, sent, err := r.publish(ctx, evs, round)
		r.sentLast = max(r.sentLast, sent)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var ue *unroutableError
			if errors.As(err, &ue) {
				r.cfg.Logger.Warn("relay: an event reached no queue, and the broker would have dropped it; bind a queue to the exchange for every routing key (or give the relay one to declare: Config.Queue, allot relay --queue). The checkpoint stays before it; sending the batch again",
					"seq", ue.seq, "sku", ue.key, "exchange", r.cfg.Exchange, "checkpoint", cp.Seq, "from", evs[0].Seq, "to", evs[len(evs)-1].Seq, "reply", ue.reply)
			} else {
				r.cfg.Logger.Warn("relay: batch not confirmed; reconnecting and sending it again", "from", evs[0].Seq, "to", evs[len(evs)-1].Seq, "err", err)
			}
			r.closeBroker()
			checked = false
			r.pause(ctx)
			continue
		}
		last := &evs[len(evs)-1]
		next := Checkpoint{Seq: last.Seq, History: round, Event: fingerprint(last)}
		if err := next.Save(r.cfg.Checkpoint); err != nil {
			return err
		}
		cp = next
		checked = false
		r.retry.reset()
		r.Stats.Position.Store(cp.Seq)
		r.Stats.Events.Add(int64(len(evs)))
		r.Stats.Messages.Add(int64(msgs))
	}
	return nil
}

// read reads up to count events after seq after from the current node,
// waiting up to block for the first.
func (r *Relay) read(ctx context.Context, after uint64, count int, block time.Duration) ([]changes.Event, error) {
	rctx, cancel := context.WithTimeout(ctx, block+10*time.Second)
	defer cancel()
	return r.nodes[r.cur].cl.Changes(rctx, after, count, block)
}

// readChecked reads the events after the checkpoint from one event
// earlier, and checks that the node's event at the checkpoint's seq is
// the one the relay confirmed there (cp.Event): the same seq of another
// history (a server rebuilt or given another data dir, a node of another
// shard) is another event, and the node is refused with a *HistoryError.
// It returns the events after the checkpoint's, at once (no BLOCK wait:
// the event at the checkpoint is there), and the history they belong to.
//
// A checkpoint of a seq alone names no history: it takes the node's,
// named after the event at its seq, for this read only. The name becomes
// the checkpoint's when the relay saves it after the broker confirmed a
// round (Run): until then, every read takes the history of the node it
// reads, as a relay restarted from the file would. A node that no longer
// keeps the event at the checkpoint (its oldest is the one after) cannot
// be checked: the relay logs it and reads on, and the history is the
// checkpoint's (empty for a seq alone: a round names it after its first
// event).
func (r *Relay) readChecked(ctx context.Context, cp Checkpoint) (evs []changes.Event, history string, err error) {
	addr := r.nodes[r.cur].addr
	evs, err = r.read(ctx, cp.Seq-1, min(r.cfg.BatchMax+1, changes.CountMax), 0)
	var te *client.TrimmedError
	if errors.As(err, &te) && te.Oldest == cp.Seq+1 {
		r.cfg.Logger.Warn("relay: allot no longer keeps the event at the checkpoint, so its history cannot be checked; reading on",
			"addr", addr, "seq", cp.Seq, "history", cp.History)
		evs, err = r.read(ctx, cp.Seq, r.cfg.BatchMax, r.cfg.Block)
		return evs, cp.History, err
	}
	if err != nil {
		return nil, "", err
	}
	if len(evs) == 0 {
		// The node's newest seq is the one before the checkpoint's, as a
		// read after the checkpoint would have been told.
		return nil, "", &client.FutureError{After: cp.Seq, Newest: cp.Seq - 1}
	}
	if err := contiguous(cp.Seq-1, evs); err != nil {
		return nil, "", err
	}
	found := fingerprint(&evs[0])
	switch {
	case cp.Event == "":
		history = historyAt(&evs[0])
		r.cfg.Logger.Info("relay: the checkpoint names no history; taking the one of the server read (the checkpoint names it once the broker confirms a round)",
			"addr", addr, "seq", cp.Seq, "history", history)
	case found != cp.Event:
		return nil, "", &HistoryError{Checkpoint: r.cfg.Checkpoint, Seq: cp.Seq, History: cp.History, Relayed: cp.Event, Found: found}
	default:
		history = cp.History
	}
	return evs[1:], history, nil
}

// HistoryError is a node whose event at the checkpoint's seq is not the
// one the relay confirmed there: its seqs are of another history than the
// checkpoint's (a server rebuilt or given another data dir, a node of
// another shard). Reading on would publish its events as the sequel of
// the ones relayed, or skip them up to the checkpoint's seq. No retry at
// that node fixes it.
type HistoryError struct {
	Checkpoint     string // the checkpoint file
	Seq            uint64 // the checkpoint's seq
	History        string // the checkpoint's history
	Relayed, Found string // the fingerprints of the event relayed at Seq and of the node's
}

func (e *HistoryError) Error() string {
	return fmt.Sprintf("relay: allot's event %d (fingerprint %s) is not the event %d of history %s that the relay confirmed (fingerprint %s): this server's seqs are of another history than checkpoint %s (a server rebuilt or given another data dir, or a node of another shard); relaying on would publish its events as the sequel of the others. To relay this server's history from its start, under a history of its own, move %s away",
		e.Seq, e.Found, e.Seq, e.History, e.Relayed, e.Checkpoint, e.Checkpoint)
}

// backoff is the pause after a failure: RetryPause after the first,
// doubling with each failure in a row up to RetryPauseMax; a success
// starts it over. Half of each pause is fixed and half drawn at random
// ("equal jitter"), so that relays that lost their broker together do
// not all come back in step. A fixed pause (the relay's first) made a
// broker down for an hour take 7,200 connection attempts a relay, in
// step; full jitter (the whole pause drawn) was rejected: it draws pauses
// near zero, and a broker that refuses at once would be retried in a
// tight loop.
type backoff struct {
	first, max time.Duration
	failures   int // in a row; not counted once the pause reached max
}

// next returns the pause after one more failure, drawing draw from [0, 1).
func (b *backoff) next(draw float64) time.Duration {
	ceiling := b.first
	for i := 0; i < b.failures && ceiling < b.max; i++ {
		if ceiling > b.max/2 {
			ceiling = b.max
			break
		}
		ceiling *= 2
	}
	ceiling = min(ceiling, b.max)
	if ceiling < b.max {
		b.failures++
	}
	half := ceiling / 2
	// Clamped: float64 rounds a large span up.
	return half + min(time.Duration(draw*float64(ceiling-half)), ceiling-half)
}

func (b *backoff) reset() { b.failures = 0 }

// pause waits out the pause after a failure, or until ctx is done.
func (r *Relay) pause(ctx context.Context) {
	draw := rand.Float64
	if r.rand != nil {
		draw = r.rand
	}
	d := r.retry.next(draw())
	if r.sleep != nil {
		r.sleep(ctx, d)
		return
	}
	sleep(ctx, d)
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
	timeout := r.cfg.ConnectTimeout
	dial := r.dial
	if dial == nil {
		// The TCP connect, then the handshake (a deadline on the socket,
		// which amqp091-go clears once the connection is open).
		dial = amqp.DefaultDial(timeout)
	}
	var raw net.Conn
	conn, err := amqp.DialConfig(r.cfg.AMQPURL, amqp.Config{Dial: func(network, addr string) (net.Conn, error) {
		c, err := dial(network, addr)
		raw = c
		return c, err
	}})
	if err != nil {
		return fmt.Errorf("broker %s: TCP connect and AMQP handshake (each bounded by %v): %w", r.broker, timeout, err)
	}
	l := &link{raw: raw, conn: conn}
	l.unwatch = context.AfterFunc(ctx, l.close)
	go r.logBlocked(conn.NotifyBlocked(make(chan amqp.Blocking, 2)))
	ch, err := r.setUp(l, timeout)
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

// setUp opens l's channel, declares the exchange (and the queue, bound to
// it) and puts the channel in confirm mode, all within timeout. amqp091-go
// v1.10.0 bounds none of these calls (they take no context), and the
// connection's read deadline does not end them either: a broker that
// sends heartbeats moves it on. A broker that took the connection and
// never answered a declaration held the relay there for ever, before its
// first event. At the deadline the socket is closed, which fails the call
// under way; the error names the broker and the step.
func (r *Relay) setUp(l *link, timeout time.Duration) (*amqp.Channel, error) {
	var timedOut atomic.Bool
	timer := time.AfterFunc(timeout, func() {
		timedOut.Store(true)
		l.raw.Close()
	})
	step := "opening a channel"
	ch, err := l.conn.Channel()
	if err == nil {
		step = fmt.Sprintf("declaring the durable topic exchange %q", r.cfg.Exchange)
		err = ch.ExchangeDeclare(r.cfg.Exchange, "topic", true, false, false, false, nil)
	}
	if err == nil && r.cfg.Queue != "" {
		step = fmt.Sprintf("declaring the durable queue %q", r.cfg.Queue)
		if _, err = ch.QueueDeclare(r.cfg.Queue, true, false, false, false, nil); err == nil {
			step = fmt.Sprintf("binding the queue %q to the exchange %q", r.cfg.Queue, r.cfg.Exchange)
			err = ch.QueueBind(r.cfg.Queue, "#", r.cfg.Exchange, false, nil)
		}
	}
	if err == nil {
		step = "putting the channel in confirm mode"
		err = ch.Confirm(false)
	}
	// A timer that fired (or is firing) has closed the socket, whatever
	// the calls returned.
	if !timer.Stop() || timedOut.Load() {
		if err == nil {
			err = errors.New("the connection was closed at the deadline")
		}
		return nil, fmt.Errorf("broker %s: no answer within %v while %s: %w", r.broker, timeout, step, err)
	}
	if err != nil {
		return nil, fmt.Errorf("broker %s: %s: %w", r.broker, step, err)
	}
	return ch, nil
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
// Every message carries the history its seq belongs to (header
// allot-history). A message of an event up to r.sentLast is sent again: it
// carries the header resent and counts in Stats.Resent once it is handed
// over.
func (r *Relay) publish(ctx context.Context, evs []changes.Event, history string) (msgs int, sent uint64, err error) {
	l := r.link
	cctx, cancel := context.WithTimeout(ctx, r.cfg.ConfirmTimeout)
	defer cancel()
	// amqp091-go v1.10.0 drops a publish's context: a publish blocked in
	// its write returns only when the connection closes. (stop runs before
	// cancel: a round that ends in time keeps its connection.)
	stop := context.AfterFunc(cctx, l.close)
	defer stop()
	if r.broken != nil {
		evs = r.broken(evs)
	}
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
			headers := amqp.Table{"seq": int64(ev.Seq), "allot-history": history}
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

// Checkpoint is the relay's position in allot's change stream: the seq of
// the last event the broker confirmed, the history that seq belongs to,
// and the fingerprint of that event.
//
// A seq alone does not say whose it is: a server rebuilt (a new data dir)
// numbers its events from 1 again, and a checkpoint of the old one would
// skip the new one's events up to its seq, then publish the rest as the
// sequel of the old ones. allot's change stream names no history
// (DESIGN.md, "Change stream"), so the relay tells histories apart by
// their events: the event at the checkpoint's seq must be the one it
// confirmed there (the same fingerprint: seq, time, op, hold, key, SKU and
// rows; the time is the engine's clock in milliseconds, journaled with the
// op, so the event is the same on every node of a shard and every replay,
// and another on a server rebuilt). The relay checks it before it reads on
// after any failure or round (Relay.readChecked).
//
// History names the history after the first event the relay published
// under this checkpoint, "<seq>-<fingerprint>" (usually seq 1): two relays
// started from seq 1 of one server name it alike, and a server rebuilt
// gets another name. It is empty, as Event is, in a checkpoint of a seq
// alone (an earlier relay's, or one set by hand), which takes the history
// of the server it is resumed on.
type Checkpoint struct {
	Seq     uint64
	History string
	Event   string
}

// LoadCheckpoint reads the checkpoint file: the zero Checkpoint when the
// file does not exist. The file holds the seq, then "history=<history>
// event=<fingerprint>" (a file of the seq alone is read too).
func LoadCheckpoint(name string) (Checkpoint, error) {
	b, err := os.ReadFile(name)
	if errors.Is(err, os.ErrNotExist) {
		return Checkpoint{}, nil
	}
	if err != nil {
		return Checkpoint{}, fmt.Errorf("relay: read checkpoint: %w", err)
	}
	var cp Checkpoint
	fields := strings.Fields(string(b))
	ok := len(fields) == 1 || len(fields) == 3
	if ok {
		cp.Seq, err = strconv.ParseUint(fields[0], 10, 63)
		ok = err == nil
	}
	if ok && len(fields) == 3 {
		var okHistory, okEvent bool
		cp.History, okHistory = strings.CutPrefix(fields[1], "history=")
		cp.Event, okEvent = strings.CutPrefix(fields[2], "event=")
		ok = okHistory && okEvent && validHistory(cp.History) && validFingerprint(cp.Event)
	}
	if !ok {
		if len(b) > 80 {
			b = append(b[:80:80], "..."...)
		}
		return Checkpoint{}, fmt.Errorf("relay: checkpoint %s does not hold a seq (and its history=… event=…): %q", name, b)
	}
	return cp, nil
}

// Save replaces the checkpoint file, durably: a temporary file, fsync,
// rename, fsync of the directory. A crash leaves the old checkpoint or the
// new one, never a torn file.
func (c Checkpoint) Save(name string) error {
	text := strconv.FormatUint(c.Seq, 10)
	if c.History != "" {
		text += " history=" + c.History + " event=" + c.Event
	}
	if err := vfs.WriteFileAtomic(vfs.OS{}, name, []byte(text+"\n")); err != nil {
		return fmt.Errorf("relay: checkpoint %s: %w", name, err)
	}
	return nil
}

// ReadCheckpoint returns the seq in the checkpoint file, 0 when the file
// does not exist.
func ReadCheckpoint(name string) (uint64, error) {
	cp, err := LoadCheckpoint(name)
	return cp.Seq, err
}

// WriteCheckpoint replaces the checkpoint file with a checkpoint of seq
// alone, durably: a relay resumed from it takes the history of the server
// it reads (see Checkpoint).
func WriteCheckpoint(name string, seq uint64) error {
	return Checkpoint{Seq: seq}.Save(name)
}

// fingerprint returns 16 hex digits of the SHA-256 of ev's fields, each
// length-prefixed. Not of its JSON: a field a later server adds to the
// JSON must not make the same event another.
func fingerprint(ev *changes.Event) string {
	b := make([]byte, 0, 128)
	field := func(s string) {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	b = binary.AppendUvarint(b, ev.Seq)
	b = binary.AppendVarint(b, ev.TimeMS)
	field(ev.Op)
	field(ev.Hold)
	field(ev.Key)
	field(ev.SKU)
	b = binary.AppendUvarint(b, uint64(len(ev.Rows)))
	for i := range ev.Rows {
		row := &ev.Rows[i]
		field(row.SKU)
		field(row.Warehouse)
		field(row.Condition)
		field(row.Source)
		b = binary.AppendVarint(b, row.Delta)
		b = binary.AppendVarint(b, row.CountAfter)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:fingerprintBytes])
}

// fingerprintBytes is a fingerprint's length: two events of different
// histories at one seq share one with probability 2^-64.
const fingerprintBytes = 8

// historyAt names a history after its event ev (see Checkpoint).
func historyAt(ev *changes.Event) string {
	return strconv.FormatUint(ev.Seq, 10) + "-" + fingerprint(ev)
}

func validFingerprint(s string) bool {
	if len(s) != 2*fingerprintBytes {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

func validHistory(s string) bool {
	seq, fp, ok := strings.Cut(s, "-")
	if !ok || !validFingerprint(fp) {
		return false
	}
	_, err := strconv.ParseUint(seq, 10, 63)
	return err == nil
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
