package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"allot/engine"
	"allot/server"
)

// Run runs a node until ctx ends: it follows the shard's log as a standby,
// takes the lease when it lapses, serves as the primary until it loses it,
// and so on. Each turn (a term) opens the engine and the server afresh, so
// that a deposed primary's engine, which applied what the log refused, is
// dropped and rebuilt from its journal. It returns nil when ctx ends, an
// error when the node cannot run at all.
func Run(ctx context.Context, cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return &ConfigError{err}
	}
	var opts []nats.Option
	if cfg.Fault == FaultSlowPing {
		opts = append(opts, nats.PingInterval(nats.DefaultPingInterval), nats.MaxPingsOutstanding(nats.DefaultMaxPingOut))
	}
	log, err := openShard(ctx, cfg.URLs, cfg.Shard, cfg.NodeID, cfg.LeaseTTL, cfg.Engine.Retention, cfg.Logger, opts...)
	if err != nil {
		return err
	}
	defer log.close()
	// In a cluster of several shards, an op of another shard's group
	// sent to this node directly is refused (ShardMap.opCheck).
	cfg.Engine.CheckOp = log.shards.opCheck(cfg.Shard)
	n := &node{cfg: cfg, log: log, logger: cfg.Logger.With("node", cfg.NodeID, "shard", cfg.Shard)}
	failures := 0
	for {
		err := n.term(ctx)
		if ctx.Err() != nil {
			return nil
		}
		var fatal *fatalError
		if errors.As(err, &fatal) {
			return fatal.err
		}
		failures++
		n.logger.Warn("cluster: term ended; starting again as a standby", "err", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(min(time.Duration(failures)*50*time.Millisecond, time.Second)):
		}
	}
}

// fatalError ends Run: the node cannot serve (its data directory or its
// addresses are unusable).
type fatalError struct{ err error }

func (e *fatalError) Error() string { return e.err.Error() }

type node struct {
	cfg    Config
	log    *shardLog
	logger *slog.Logger
	// strandedReported is the count of catalog records stranded on this
	// shard last reported (reportStrandedCatalog), 0 before any.
	strandedReported int
}

// term runs the node from opening its engine to stepping down.
func (n *node) term(ctx context.Context) error {
	e, from, err := n.openEngine(ctx)
	if err != nil {
		return err
	}
	scfg := n.cfg.Server
	srv, err := server.New(scfg, e)
	if err != nil {
		e.Close()
		return &fatalError{err}
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve() }()
	me := leaseValue{Node: n.cfg.NodeID, RESP: n.cfg.Advertise, HTTP: n.cfg.AdvertiseHTTP}
	if me.RESP == "" {
		me.RESP = srv.RESPAddr()
	}
	if me.HTTP == "" {
		me.HTTP = srv.HTTPAddr()
	}
	n.logger.Info("cluster: standby", "resp", srv.RESPAddr(), "http", srv.HTTPAddr(), "lsn", e.DurableLSN())
	n.reportStrandedCatalog(e, "open")

	termCtx, stop := context.WithCancel(ctx)
	defer stop()
	// The primary's appends run on a context of their own: on SIGTERM the
	// requests already taken finish (the server's shutdown waits for
	// them) before the appends stop; a deposed primary stops them first.
	writerCtx, stopWriter := context.WithCancel(context.Background())
	defer stopWriter()
	var lease *leaseKeeper // from the moment this node takes the lease
	graceful, deposed := false, false
	defer func() {
		if !graceful {
			stopWriter()
		}
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		srv.Shutdown(sctx)
		cancel()
		stopWriter()
		stop()
		if err := e.Close(); err != nil {
			n.logger.Warn("cluster: closing the engine", "err", err)
		}
		if lease == nil {
			return
		}
		// The lease is kept until the requests taken finished above.
		if held := lease.stop(); held != 0 && !deposed {
			// Let a standby take over now rather than after the TTL.
			if err := n.log.dropLease(context.Background(), held); err != nil {
				n.logger.Warn("cluster: drop the lease", "err", err)
			}
		}
	}()

	lease, last, err := n.standby(termCtx, e, from, me, served)
	if err != nil || lease == nil {
		return err
	}
	// Caught up to the log: what an earlier primary applied is here too.
	n.reportStrandedCatalog(e, "takeover")
	w := newLogWriter(writerCtx, n.log, n.cfg.NodeID, last, n.cfg.Fault)
	if err := e.Promote(w); err != nil {
		return err
	}
	n.logger.Info("cluster: primary", "resp", me.RESP, "http", me.HTTP, "lsn", e.DurableLSN(), "log_seq", last)
	// The snapshot loop stops with the lease (or the term), not with the
	// term's end: that waits for the server's shutdown (up to 5 s), and a
	// deposed primary's Put of an older snapshot could land after the new
	// primary stored a newer one and trimmed the log behind it.
	snapCtx, stopSnaps := context.WithCancel(termCtx)
	stopWithLease := context.AfterFunc(lease.ctx, stopSnaps)
	go n.storeSnapshots(snapCtx)
	err = n.primary(termCtx, e, w, lease, served)
	stopWithLease()
	stopSnaps()
	graceful = err == nil
	deposed = errors.Is(err, errDeposed)
	return err
}

// openEngine opens the engine on the data directory, first installing the
// stored snapshot when the log no longer holds what follows the journal.
// It returns the engine and the log's sequence to follow from.
func (n *node) openEngine(ctx context.Context) (*engine.Engine, uint64, error) {
	id, err := n.log.identity(ctx)
	if err != nil {
		return nil, 0, err
	}
	e, err := engine.Open(n.cfg.Engine)
	if err != nil {
		return nil, 0, &fatalError{err}
	}
	if err := checkIdentity(n.cfg.Engine.Dir, id, e.DurableLSN()); err != nil {
		e.Close()
		return nil, 0, &fatalError{err}
	}
	from, err := n.log.seqAfter(ctx, e.DurableLSN())
	if !errors.Is(err, errBehindLog) {
		if err != nil {
			e.Close()
			return nil, 0, pastLogFatal(err)
		}
		return e, from, nil
	}
	lsn := e.DurableLSN()
	e.Close()
	stored, err := n.log.installSnapshot(ctx, n.cfg.Engine.Dir)
	if err != nil {
		return nil, 0, err
	}
	n.logger.Info("cluster: installed the stored snapshot", "journal_lsn", lsn, "snapshot_lsn", stored)
	if e, err = engine.Open(n.cfg.Engine); err != nil {
		return nil, 0, &fatalError{err}
	}
	if from, err = n.log.seqAfter(ctx, e.DurableLSN()); err != nil {
		e.Close()
		return nil, 0, pastLogFatal(err)
	}
	return e, from, nil
}

// pastLogFatal makes errPastLog end the node, which retrying cannot mend,
// and says what to do; other errors stay as they are.
func pastLogFatal(err error) error {
	if !errors.Is(err, errPastLog) {
		return err
	}
	return &fatalError{fmt.Errorf("%w; start the node on an empty data directory, and it catches up from the log (a cluster cannot be seeded from an existing data directory)", err)}
}

// standby follows the log from message from until this node takes the
// lease; then it applies the rest of the log and appends its fence. It
// returns the keeper of the lease (nil when ctx ended), which renews it
// from the moment it was taken, and the fence's sequence. The keeper is
// returned with an error too, once the lease was taken: the caller stops
// it and drops the lease.
func (n *node) standby(ctx context.Context, e *engine.Engine, from uint64, me leaseValue, served <-chan error) (*leaseKeeper, uint64, error) {
	var applied atomic.Uint64 // the last message applied
	applied.Store(from - 1)
	fctx, stopFollowing := context.WithCancel(ctx)
	followed := make(chan error, 1)
	go func() { followed <- n.follow(fctx, e, from, &applied) }()
	defer func() {
		stopFollowing()
		<-followed
	}()
	poll := time.NewTicker(max(n.cfg.LeaseTTL/10, 50*time.Millisecond))
	defer poll.Stop()
	for first := true; ; first = false {
		if !first {
			select {
			case <-ctx.Done():
				return nil, 0, nil
			case err := <-followed:
				followed <- err // for the deferred wait
				return nil, 0, fmt.Errorf("cluster: following the log: %w", err)
			case err := <-served:
				return nil, 0, &fatalError{fmt.Errorf("cluster: server: %w", err)}
			case <-poll.C:
			}
		}
		v, _, found, err := n.log.readLease(ctx)
		if err != nil {
			n.logger.Debug("cluster: read the lease", "err", err)
			continue
		}
		if found {
			e.SetPrimary(v.RESP, v.HTTP)
			continue
		}
		sent := time.Now()
		rev, err := n.log.takeLease(ctx, me)
		if err != nil {
			continue // someone else was quicker, or NATS did not answer
		}
		// Renewed from now on: catching up may take longer than the TTL
		// (a long tail, NATS electing its leaders after a restart), and a
		// lease that lapsed meanwhile let a second node take it and fence
		// the log after this one, which then was deposed at its first
		// append: two promotions for one.
		lease := n.keepLease(me, rev, sent, e)
		stopFollowing()
		if err := <-followed; err != nil {
			followed <- err
			return lease, 0, fmt.Errorf("cluster: following the log: %w", err)
		}
		followed <- nil
		// Catching up ends with the term or with the lease.
		cctx, ccancel := context.WithCancel(ctx)
		unhook := context.AfterFunc(lease.ctx, ccancel)
		last, err := n.catchUp(cctx, e, applied.Load(), me)
		unhook()
		ccancel()
		if err != nil {
			if lerr := lease.err(); lerr != nil {
				err = lerr
			}
			return lease, 0, err
		}
		return lease, last, nil
	}
}

// catchUp applies the log after message applied, to its end, and appends
// the fence there; when another primary appended in between it applies
// that too and tries again. It returns the fence's sequence.
func (n *node) catchUp(ctx context.Context, e *engine.Engine, applied uint64, me leaseValue) (uint64, error) {
	body, _ := json.Marshal(me)
	deadline := time.Now().Add(n.cfg.LeaseTTL)
	for {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("cluster: could not fence the log within %v", n.cfg.LeaseTTL)
		}
		_, last, err := n.log.position(ctx)
		if err != nil {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		for seq := applied + 1; seq <= last; seq++ {
			if err := n.applySeq(ctx, e, seq); err != nil {
				return 0, err
			}
			applied = seq
		}
		seq, err := n.log.fence(ctx, n.cfg.NodeID, applied, e.DurableLSN(), body)
		if err == nil {
			return seq, nil
		}
		if !isWrongSequence(err) {
			n.logger.Debug("cluster: fence", "err", err)
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// A standby follows the log through an ordered consumer, which pushes
// each message as soon as the stream has it. That consumer is ephemeral
// and lives on one NATS node: when the node dies, the client library
// notices only after two missed heartbeats (5 s each by default) and then
// makes a new one, retrying with a backoff while NATS elects its leaders.
// Measured with the consumer alone, a standby read the state from before
// the kill -9 of the stream leader's NATS node for 22-30 s (once over
// 40 s), while the primary acknowledged again 4-8 s after the kill. So
// the consumer is the fast path, not the truth: whenever it has been
// quiet for followIdle, the standby reads on from the log itself (a get
// by sequence, answered by the stream's leader) to the log's end, and a
// message the consumer delivers later is skipped if already applied or
// preceded by the missing ones, read the same way.
const (
	followIdle      = time.Second
	followHeartbeat = followIdle
	followExpiry    = 5 * followHeartbeat // a pull request's life; at least twice the heartbeat
)

// follow applies the log's messages from sequence from, in order, until
// ctx ends (nil) or a message cannot be applied.
func (n *node) follow(ctx context.Context, e *engine.Engine, from uint64, applied *atomic.Uint64) error {
	cons, err := n.log.stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
		DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: from})
	if err != nil {
		if ctx.Err() != nil {
			return nil // stopped while it started
		}
		return fmt.Errorf("cluster: consumer on %s: %w", n.log.names.stream, err)
	}
	slow := n.cfg.Fault == FaultSlowFollow
	opts := []jetstream.PullMessagesOpt{jetstream.PullExpiry(followExpiry), jetstream.PullHeartbeat(followHeartbeat)}
	if slow {
		opts = nil
	}
	it, err := cons.Messages(opts...)
	if err != nil {
		return fmt.Errorf("cluster: consume %s: %w", n.log.names.stream, err)
	}
	msgs := make(chan jetstream.Msg)
	failed := make(chan error, 1)
	go func() {
		<-ctx.Done()
		it.Stop()
	}()
	go func() {
		for {
			m, err := it.Next()
			if err != nil {
				failed <- err
				return
			}
			select {
			case msgs <- m:
			case <-ctx.Done():
				return
			}
		}
	}()
	idle := time.NewTimer(followIdle)
	defer idle.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-failed:
			if ctx.Err() != nil {
				return nil
			}
			return err
		case <-idle.C:
			if !slow {
				if err := n.readOn(ctx, e, applied); err != nil {
					return err
				}
			}
			idle.Reset(followIdle)
		case m := <-msgs:
			md, err := m.Metadata()
			if err != nil {
				return err
			}
			seq := md.Sequence.Stream
			if seq <= applied.Load() {
				continue // read from the log while the consumer was quiet
			}
			for next := applied.Load() + 1; next < seq; next++ {
				if err := n.applySeq(ctx, e, next); err != nil {
					return fmt.Errorf("cluster: the log skipped from message %d to %d (trimmed?): %w", applied.Load(), seq, err)
				}
				applied.Store(next)
			}
			if err := n.apply(e, m.Headers(), m.Data()); err != nil {
				return err
			}
			applied.Store(seq)
			idle.Reset(followIdle) // a stale expiry is dropped (Go 1.23 timers)
		}
	}
}

// readOn applies the log's messages after applied, read by sequence, up
// to the log's end. A failure to read (NATS electing a leader) ends it
// quietly: the next quiet spell tries again. One that cannot be applied
// is left for the consumer's path to meet and report.
//
// A message that is not there is the log's end, unless the log was trimmed
// past it behind a stored snapshot while this standby was behind (paused,
// cut off): then it can never read on, and says so (errBehindTrimmedLog),
// so that the node starts again from the snapshot. The consumer's path
// notices that too, but only when a later message arrives: on a quiet
// shard the standby would serve its old state until the next write.
func (n *node) readOn(ctx context.Context, e *engine.Engine, applied *atomic.Uint64) error {
	for ctx.Err() == nil {
		next := applied.Load() + 1
		m, err := n.log.get(ctx, next)
		if err != nil {
			if !errors.Is(err, jetstream.ErrMsgNotFound) {
				n.logger.Debug("cluster: read the log on", "seq", next, "err", err)
				return nil
			}
			if first, _, perr := n.log.position(ctx); perr == nil && first > next {
				return fmt.Errorf("%w: it starts at message %d, this standby applied up to %d", errBehindTrimmedLog, first, next-1)
			}
			return nil
		}
		if err := n.apply(e, m.Header, m.Data); err != nil {
			n.logger.Warn("cluster: apply a message read from the log", "seq", next, "err", err)
			return nil
		}
		applied.Store(next)
	}
	return nil
}

// errBehindTrimmedLog: the log was trimmed past what a standby applied.
var errBehindTrimmedLog = errors.New("cluster: the log was trimmed behind a stored snapshot past this standby's position")

// applySeq reads the log's message seq and applies it.
func (n *node) applySeq(ctx context.Context, e *engine.Engine, seq uint64) error {
	m, err := n.log.get(ctx, seq)
	if err != nil {
		return err
	}
	return n.apply(e, m.Header, m.Data)
}

// apply applies one message of the log to a standby.
func (n *node) apply(e *engine.Engine, h nats.Header, data []byte) error {
	switch h.Get(headerKind) {
	case kindFrame:
		return e.ApplyFrame(data)
	case kindFence:
		var v leaseValue
		if json.Unmarshal(data, &v) == nil {
			e.SetPrimary(v.RESP, v.HTTP)
		}
		return nil
	}
	return fmt.Errorf("cluster: a log message of unknown kind %q", h.Get(headerKind))
}

// primary serves as the shard's primary until the node is deposed, loses
// the lease, its engine stops, or ctx ends (nil).
//
// An engine that stopped (its journal failed, or an append to the log
// went unanswered past appendRetryMax) refuses every request from then
// on; holding the lease with it would keep the shard down for as long as
// the renewals succeed. So the node steps down: the term ends, the lease
// is dropped for a standby to take at once, and this node starts again as
// a standby from its journal and the log.
func (n *node) primary(ctx context.Context, e *engine.Engine, w *logWriter, lease *leaseKeeper, served <-chan error) error {
	select {
	case <-ctx.Done():
		return nil
	case <-w.deposed:
		return errDeposed
	case err := <-served:
		return &fatalError{fmt.Errorf("cluster: server: %w", err)}
	case <-lease.ctx.Done():
		return lease.err()
	case <-e.Stopped():
		return fmt.Errorf("cluster: stepping down: the engine stopped: %w", e.Failure())
	}
}

// leaseKeeper renews a lease this node took, every LeaseTTL/4, until it
// is stopped or the lease is lost.
//
// The lease is lost when a renewal's compare-and-set fails (another node
// holds it), and also when no renewal succeeded for too long: the bucket
// forgets a lease TTL after its last renewal was stored, never sooner
// than a TTL after that renewal was sent, and a standby may then take it.
// So the keeper bounds the primary by the send time of its last renewal
// that succeeded: from sent + TTL − leaseMargin on, its engine refuses
// everything (engine.SetLeaseUntil) and the keeper ends, so the node steps
// down. Writes need no clock (the log's sequence check refuses a deposed
// primary's appends), but a read, an idempotent repeat or an op that
// changes nothing is answered from the engine's state alone, and a
// primary cut off from NATS, renewing in vain, answered them from a
// state the new primary had moved past. Treating a renewal that timed
// out as a warning only, as the keeper did, never ended that.
type leaseKeeper struct {
	// ctx ends when the lease is lost (err says how) or the keeper stops.
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	mu   sync.Mutex
	rev  uint64 // the lease's revision; 0 once lost to another node
	lost error
}

// leaseMargin is how much earlier than a TTL after its last renewal was
// sent a primary stops serving: room for the clocks of this node and of
// the bucket's NATS server to run at different rates, and for the time a
// request takes between its check and its answer.
func leaseMargin(ttl time.Duration) time.Duration { return max(ttl/10, 100*time.Millisecond) }

// keepLease starts renewing the lease taken at revision rev by a request
// sent at sent, and bounds e (nil in tests of the keeper alone) by it.
func (n *node) keepLease(me leaseValue, rev uint64, sent time.Time, e *engine.Engine) *leaseKeeper {
	ctx, cancel := context.WithCancel(context.Background())
	k := &leaseKeeper{ctx: ctx, cancel: cancel, done: make(chan struct{}), rev: rev}
	trusted := n.cfg.LeaseTTL - leaseMargin(n.cfg.LeaseTTL)
	// Broken on purpose (FaultNoExpectedSequence): the lease is ignored,
	// its renewals' failures and its age alike.
	bounded := n.cfg.Fault != FaultNoExpectedSequence
	until := sent.Add(trusted)
	if e != nil && bounded {
		e.SetLeaseUntil(until)
	}
	expiry := time.NewTimer(time.Until(until))
	if !bounded {
		expiry.Stop()
	}
	lapsed := func() {
		k.mu.Lock()
		// rev is kept: the node drops the lease if it is still at rev
		// (nobody took it since), so that a standby need not wait a TTL.
		k.lost = fmt.Errorf("cluster: lost the lease: no renewal succeeded within %v of the last one sent (TTL %v): another node may hold it", trusted, n.cfg.LeaseTTL)
		k.mu.Unlock()
		n.logger.Warn("cluster: stepping down: the lease was not renewed in time", "trusted", trusted, "ttl", n.cfg.LeaseTTL)
		cancel()
	}
	go func() {
		defer close(k.done)
		defer expiry.Stop()
		renew := time.NewTicker(n.cfg.LeaseTTL / 4)
		defer renew.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-expiry.C:
				lapsed()
				return
			case <-renew.C:
			}
			k.mu.Lock()
			rev := k.rev
			k.mu.Unlock()
			// A renewal answered after until is of no use: the engine
			// refuses from then on, whatever the answer.
			rctx, rcancel := context.WithDeadline(ctx, until)
			if !bounded {
				rctx, rcancel = context.WithCancel(ctx)
			}
			sent := time.Now()
			next, err := n.log.renewLease(rctx, me, rev)
			if err == nil {
				rcancel()
				k.mu.Lock()
				k.rev = next
				k.mu.Unlock()
				if bounded {
					until = sent.Add(trusted)
					if e != nil {
						e.SetLeaseUntil(until)
					}
					expiry.Reset(time.Until(until))
				}
				continue
			}
			if ctx.Err() != nil {
				rcancel()
				return
			}
			if !bounded {
				rcancel()
				continue // broken on purpose: trust the log alone
			}
			if errors.Is(err, jetstream.ErrKeyExists) || isWrongSequence(err) || errors.Is(err, jetstream.ErrKeyNotFound) {
				// A renewal whose reply was lost (a timeout while NATS
				// elected the bucket's leader, a connection that dropped
				// and came back within the lease) may have landed: the
				// lease is then this node's at a later revision, and
				// giving it up would leave it naming this node, which no
				// node could take until the TTL ran out. (When that
				// renewal was sent is not known: until stays where it is,
				// and the next renewal moves it.)
				v, cur, found, rerr := n.log.readLease(rctx)
				rcancel()
				if rerr == nil && found && v == me && cur > rev {
					k.mu.Lock()
					k.rev = cur
					k.mu.Unlock()
					n.logger.Info("cluster: the lease was renewed by a renewal whose reply was lost", "rev", cur)
					continue
				}
				k.mu.Lock()
				k.rev, k.lost = 0, fmt.Errorf("cluster: lost the lease: %w", err)
				k.mu.Unlock()
				cancel()
				return
			}
			rcancel()
			n.logger.Warn("cluster: renew the lease", "err", err)
		}
	}()
	return k
}

// err is why the lease was lost, or nil while it is held.
func (k *leaseKeeper) err() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.lost
}

// stop ends the renewals and returns the revision still held (0 when the
// lease was lost).
func (k *leaseKeeper) stop() uint64 {
	k.cancel()
	<-k.done
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.rev
}

// storeSnapshots stores each newer engine snapshot while the node is the
// primary.
func (n *node) storeSnapshots(ctx context.Context) {
	stored, err := n.log.storedSnapshot(ctx)
	if err != nil {
		n.logger.Warn("cluster: stored snapshot", "err", err)
	}
	t := time.NewTicker(n.cfg.SnapshotPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		// A deposed primary's Put of an older snapshot can land after
		// this one's newer Put and trim (the object store's Put returns
		// when its context ends without taking back its meta message,
		// which a connection cut off from NATS sends once it is back):
		// then the store holds a snapshot the log no longer continues,
		// and this primary stores its own again.
		if stored.lsn > 0 {
			if now, err := n.log.storedSnapshot(ctx); err == nil && now.lsn < stored.lsn {
				n.logger.Warn("cluster: the stored snapshot was set back by an older one; storing this node's again",
					"stored_lsn", now.lsn, "lsn", stored.lsn)
				stored = now
			}
		}
		lsn, err := n.log.storeSnapshot(ctx, n.cfg.Engine.Dir, stored.lsn)
		if err != nil {
			n.logger.Warn("cluster: store a snapshot", "err", err)
		}
		if lsn > 0 {
			stored.lsn = lsn
			n.logger.Info("cluster: stored a snapshot and trimmed the log behind it", "lsn", lsn)
		}
	}
}
