package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Headers of the log's messages.
const (
	headerKind     = "Allot-Kind"      // kindFrame or kindFence
	headerFirstLSN = "Allot-First-LSN" // a frame's first op
	headerLSN      = "Allot-LSN"       // a frame's last op; a fence's: the last op before it
	headerNode     = "Allot-Node"      // who appended it
	kindFrame      = "frame"
	kindFence      = "fence"
)

// shardLog is a shard's JetStream resources, opened (created if missing)
// by openShard.
type shardLog struct {
	names  names
	nc     *nats.Conn
	js     jetstream.JetStream
	stream jetstream.Stream
	lease  jetstream.KeyValue
	snaps  jetstream.ObjectStore
	logID  string // the stream's log id (logIdentity), as create found or made it
	// shards is the cluster's shard map as openShard found it (the zero
	// map when the cluster has none: a single shard). It is fixed once
	// made, so it is read once.
	shards ShardMap
	// retention is this node's --retention, which create records in the
	// stream's metadata (retentionKey) or checks against it; 0 (tests of
	// the log alone): neither.
	retention time.Duration
}

// retentionKey is the stream metadata key of the shard's retention window
// in milliseconds: how long finished holds and idempotency keys are
// remembered. It is the shard's, not a node's: a standby applies the
// primary's frames under the shortest window (inventory.ReplayRetentionMS)
// and answers with its own once promoted, so a standby with a shorter
// window than its primary's forgot keys the primary still answered, and
// after a failover a repeated request was applied a second time.
const retentionKey = "allot_retention_ms"

// requestTimeout bounds one JetStream request; a failed one is retried by
// its caller while that makes sense.
const requestTimeout = 2 * time.Second

// openShard connects to NATS and creates the shard's stream, lease bucket
// and object store if they are missing, retrying until ctx ends while the
// cluster has no JetStream quorum yet. retention is the node's window
// (shardLog.retention). opts go to the NATS connection after connect's
// own.
func openShard(ctx context.Context, urls, shard, node string, leaseTTL, retention time.Duration, logger *slog.Logger, opts ...nats.Option) (*shardLog, error) {
	n, err := namesOf(shard)
	if err != nil {
		return nil, err
	}
	nc, js, err := connect(urls, "allot "+node, opts...)
	if err != nil {
		return nil, err
	}
	l := &shardLog{names: n, nc: nc, js: js, retention: retention}
	for {
		err = l.checkShard(ctx, shard)
		if errors.Is(err, errNotInMap) {
			nc.Close()
			return nil, &ConfigError{err}
		}
		if err == nil {
			err = l.create(ctx, leaseTTL)
		}
		var ce *ConfigError
		if errors.As(err, &ce) {
			nc.Close()
			return nil, ce
		}
		if err == nil {
			return l, nil
		}
		logger.Warn("cluster: JetStream not ready; retrying", "err", err)
		select {
		case <-ctx.Done():
			nc.Close()
			return nil, fmt.Errorf("cluster: create the JetStream resources of shard %s: %w", shard, err)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// A NATS server that hangs (a machine that stops answering, a network
// that cuts it off) leaves its clients' connections open: a client learns
// of it only from pings it sent that went unanswered. The client library
// pings every 2 minutes and gives up after two: every node connected to
// that server would wait minutes before it reconnected to another, while
// the rest of the NATS cluster served on. A ping a second, two unanswered,
// notices it in about two seconds (TestHungNATSNode), for a message a
// second on an idle connection.
const (
	pingInterval = time.Second
	maxPingsOut  = 2
)

// connect connects to the NATS servers urls as name, reconnecting for
// ever, and opens JetStream. opts go after its own (a test's fault).
func connect(urls, name string, opts ...nats.Option) (*nats.Conn, jetstream.JetStream, error) {
	opts = append([]nats.Option{nats.Name(name), nats.MaxReconnects(-1),
		nats.ReconnectWait(50 * time.Millisecond), nats.RetryOnFailedConnect(true),
		nats.PingInterval(pingInterval), nats.MaxPingsOutstanding(maxPingsOut)}, opts...)
	nc, err := nats.Connect(urls, opts...)
	if err != nil {
		return nil, nil, fmt.Errorf("cluster: connect to %s: %w", urls, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("cluster: jetstream: %w", err)
	}
	return nc, js, nil
}

// checkShard refuses a shard the cluster's shard map does not name, and
// keeps the map (shardLog.shards).
func (l *shardLog) checkShard(ctx context.Context, shard string) error {
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	m, err := checkShard(rctx, l.js, shard)
	l.shards = m
	return err
}

func (l *shardLog) create(ctx context.Context, leaseTTL time.Duration) error {
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := l.checkExisting(rctx, "lease bucket", "KV_"+l.names.lease, leaseTTL); err != nil {
		return err
	}
	if err := l.checkExisting(rctx, "object store", "OBJ_"+l.names.snaps, 0); err != nil {
		return err
	}
	var err error
	if l.stream, err = l.ensureStream(rctx); err != nil {
		return fmt.Errorf("stream %s: %w", l.names.stream, err)
	}
	l.logID = l.stream.CachedInfo().Config.Metadata[logIDKey]
	l.lease, err = l.js.CreateOrUpdateKeyValue(rctx, jetstream.KeyValueConfig{
		Bucket: l.names.lease, TTL: leaseTTL, History: 1, Storage: jetstream.FileStorage, Replicas: 3,
		Description: "allot primary lease of one shard"})
	if err != nil {
		return fmt.Errorf("lease bucket %s: %w", l.names.lease, err)
	}
	l.snaps, err = l.js.CreateOrUpdateObjectStore(rctx, jetstream.ObjectStoreConfig{
		Bucket: l.names.snaps, Storage: jetstream.FileStorage, Replicas: 3,
		Description: "allot snapshots of one shard"})
	if err != nil {
		return fmt.Errorf("object store %s: %w", l.names.snaps, err)
	}
	return nil
}

// ensureStream creates the shard's stream, or updates it to the config
// the design wants, keeping its log id (logIdentity): the node that
// creates it draws the id, and a node that finds it reads it. Nodes of a
// new shard start at once: the one whose create loses (JetStream refuses
// a second stream of the name with another id) reads the winner's. The
// shard's retention (retentionKey) is recorded the same way, by the
// create, so that of two nodes started at once with different windows the
// second is refused; a node whose window differs from the recorded one is
// refused as a ConfigError.
func (l *shardLog) ensureStream(ctx context.Context) (jetstream.Stream, error) {
	cfg := jetstream.StreamConfig{
		Name: l.names.stream, Subjects: []string{l.names.subject},
		Storage: jetstream.FileStorage, Replicas: 3, Discard: jetstream.DiscardOld,
		Description: "allot journal frames of one shard"}
	for {
		s, err := l.js.Stream(ctx, cfg.Name)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			cfg.Metadata = map[string]string{logIDKey: newLogID()}
			if l.retention > 0 {
				cfg.Metadata[retentionKey] = strconv.FormatInt(l.retention.Milliseconds(), 10)
			}
			s, err = l.js.CreateStream(ctx, cfg)
			if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) && ctx.Err() == nil {
				continue // another node created it first
			}
			return s, err
		}
		if err != nil {
			return nil, err
		}
		have := s.CachedInfo().Config
		if err := configRefused("stream", cfg.Name, have, 0); err != nil {
			return nil, err
		}
		cfg.Metadata = map[string]string{}
		for k, v := range have.Metadata {
			if !strings.HasPrefix(k, "_nats.") { // the server's own
				cfg.Metadata[k] = v
			}
		}
		if cfg.Metadata[logIDKey] == "" {
			// A stream of an earlier allot, which named its log by the
			// stream's creation time (logIdentity): named now.
			cfg.Metadata[logIDKey] = newLogID()
		}
		if l.retention > 0 {
			if err := retentionRefused(cfg.Name, cfg.Metadata[retentionKey], l.retention); err != nil {
				return nil, err
			}
			// A stream of an earlier allot, which recorded none: this
			// node's window is the shard's from now on.
			cfg.Metadata[retentionKey] = strconv.FormatInt(l.retention.Milliseconds(), 10)
		}
		return l.js.UpdateStream(ctx, cfg)
	}
}

// checkExisting refuses, as a ConfigError, a resource of the shard (what,
// held in the stream named stream) that exists with settings create must
// not or cannot change: storage other than file (JetStream refuses to
// change it, and openShard retried that for ever as if JetStream were not
// ready), and, for the lease bucket, a TTL other than leaseTTL (create
// changed it under the running primary, which then renewed a lease the
// bucket forgot between renewals: a failover every few seconds). Other
// settings create makes what the design wants (R3, no limits). A stream
// that does not exist yet is fine; a failure to look is retried.
func (l *shardLog) checkExisting(ctx context.Context, what, stream string, leaseTTL time.Duration) error {
	s, err := l.js.Stream(ctx, stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s %s: %w", what, stream, err)
	}
	return configRefused(what, stream, s.CachedInfo().Config, leaseTTL)
}

// configRefused is checkExisting's verdict on a resource found with cfg
// (ensureStream's on the shard's stream).
func configRefused(what, stream string, cfg jetstream.StreamConfig, leaseTTL time.Duration) error {
	if cfg.Storage != jetstream.FileStorage {
		return &ConfigError{fmt.Errorf("cluster: the %s %s exists with %s storage; a shard's must be file storage (R3): delete it, or give another --shard",
			what, stream, strings.ToLower(cfg.Storage.String()))}
	}
	if leaseTTL > 0 && cfg.MaxAge != leaseTTL {
		return &ConfigError{fmt.Errorf("cluster: the lease bucket %s has a TTL of %v, and this node was given --lease-ttl %v: every node of a shard must use the bucket's TTL (give --lease-ttl %v), or stop every node of the shard and delete the bucket to change it",
			strings.TrimPrefix(stream, "KV_"), cfg.MaxAge, leaseTTL, cfg.MaxAge)}
	}
	return nil
}

// retentionRefused refuses, as a ConfigError, a node whose window
// (--retention) is not the one the shard's stream records (recorded, in
// milliseconds; empty when none is).
func retentionRefused(stream, recorded string, retention time.Duration) error {
	if recorded == "" {
		return nil
	}
	ms, err := strconv.ParseInt(recorded, 10, 64)
	if err != nil || ms <= 0 {
		return &ConfigError{fmt.Errorf("cluster: the stream %s records a retention of %q (metadata %s), not a number of milliseconds", stream, recorded, retentionKey)}
	}
	if have := time.Duration(ms) * time.Millisecond; have != retention {
		return &ConfigError{fmt.Errorf("cluster: the shard's log %s records a retention of %v, and this node was given --retention %v: every node of a shard must remember finished holds and idempotency keys as long (a repeat is answered by whichever node is primary), so give --retention %v; to change the shard's window, stop every node of the shard, set the stream's metadata %s to the new window in milliseconds, and start them all with the new --retention",
			stream, have, retention, have, retentionKey)}
	}
	return nil
}

func (l *shardLog) close() { l.nc.Close() }

// position is where the log stands: its first and last sequence.
func (l *shardLog) position(ctx context.Context) (first, last uint64, err error) {
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	info, err := l.stream.Info(rctx)
	if err != nil {
		return 0, 0, fmt.Errorf("cluster: stream %s info: %w", l.names.stream, err)
	}
	return info.State.FirstSeq, info.State.LastSeq, nil
}

// get returns the log's message seq.
func (l *shardLog) get(ctx context.Context, seq uint64) (*jetstream.RawStreamMsg, error) {
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	m, err := l.stream.GetMsg(rctx, seq)
	if err != nil {
		return nil, fmt.Errorf("cluster: stream %s message %d: %w", l.names.stream, seq, err)
	}
	return m, nil
}

// lsnOf reads a message's LSN header.
func lsnOf(h nats.Header, name string) (uint64, error) {
	v, err := strconv.ParseUint(h.Get(name), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("cluster: a log message without a valid %s header (%q)", name, h.Get(name))
	}
	return v, nil
}

// errBehindLog: the log no longer holds the op after a node's last one
// (trimmed behind a snapshot): the node needs the stored snapshot.
var errBehindLog = errors.New("cluster: the log is trimmed past this node's journal")

// errPastLog: the node's journal holds ops the shard's log does not. A
// node's journal is always a prefix of the log (the primary writes a frame
// locally only once the log has it), so this is a data directory of a
// single node, of another shard, or of a log that was deleted: following
// the log on top of it would mix two histories.
var errPastLog = errors.New("cluster: the data directory holds ops the shard's log does not")

// seqAfter returns the sequence of the log's first message whose LSN is
// past lsn: the frame that holds op lsn+1, or last+1 when the log holds
// nothing after lsn. It fails with errBehindLog when op lsn+1 was trimmed.
// The LSN header never decreases along the log, so a binary search finds
// it in log2(messages) reads.
func (l *shardLog) seqAfter(ctx context.Context, lsn uint64) (uint64, error) {
	first, last, err := l.position(ctx)
	if err != nil {
		return 0, err
	}
	if last == 0 || last < first { // empty: new, or trimmed behind a snapshot
		if lsn == 0 && last == 0 {
			return 1, nil
		}
		stored, err := l.storedSnapshot(ctx)
		if err != nil {
			return 0, err
		}
		switch {
		case stored.lsn == 0 && last > 0:
			// Trimmed with no snapshot of this log to catch up from:
			// following from last+1 would skip every op before it.
			return 0, &fatalError{noSnapshot(stored)}
		case stored.lsn > lsn:
			return 0, errBehindLog
		case stored.lsn < lsn:
			return 0, fmt.Errorf("%w: this node's journal ends at op %d, past the shard's log (at op %d)", errPastLog, lsn, stored.lsn)
		}
		return last + 1, nil
	}
	lo, hi := first, last+1
	for lo < hi {
		mid := lo + (hi-lo)/2
		m, err := l.get(ctx, mid)
		if err != nil {
			return 0, err
		}
		v, err := lsnOf(m.Header, headerLSN)
		if err != nil {
			return 0, err
		}
		if v > lsn {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	if lo > last {
		m, err := l.get(ctx, last)
		if err != nil {
			return 0, err
		}
		if v, _ := lsnOf(m.Header, headerLSN); v < lsn {
			return 0, fmt.Errorf("%w: this node's journal ends at op %d, past the shard's log (at op %d)", errPastLog, lsn, v)
		}
		return lo, nil
	}
	m, err := l.get(ctx, lo)
	if err != nil {
		return 0, err
	}
	if m.Header.Get(headerKind) != kindFrame {
		return 0, errBehindLog
	}
	firstLSN, err := lsnOf(m.Header, headerFirstLSN)
	if err != nil {
		return 0, err
	}
	if firstLSN > lsn+1 {
		return 0, errBehindLog
	}
	return lo, nil
}

// leaseValue is what the lease's key holds: who the primary is and where
// clients find it.
type leaseValue = Holder

// readLease returns the lease's holder and revision; found is false when
// nobody holds it.
func (l *shardLog) readLease(ctx context.Context) (v leaseValue, rev uint64, found bool, err error) {
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	e, err := l.lease.Get(rctx, leaseKey)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return v, 0, false, nil
	}
	if err != nil {
		return v, 0, false, fmt.Errorf("cluster: read the lease: %w", err)
	}
	if err := json.Unmarshal(e.Value(), &v); err != nil {
		return v, 0, false, fmt.Errorf("cluster: the lease holds %q: %w", e.Value(), err)
	}
	return v, e.Revision(), true, nil
}

// takeLease creates the lease for v; it fails with jetstream.ErrKeyExists
// when someone holds it.
func (l *shardLog) takeLease(ctx context.Context, v leaseValue) (uint64, error) {
	b, _ := json.Marshal(v)
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	return l.lease.Create(rctx, leaseKey, b)
}

// renewLease updates the lease at revision rev: it fails when someone
// else took it or it lapsed.
func (l *shardLog) renewLease(ctx context.Context, v leaseValue, rev uint64) (uint64, error) {
	b, _ := json.Marshal(v)
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	return l.lease.Update(rctx, leaseKey, b, rev)
}

// dropLease deletes the lease if it is still at revision rev, so that a
// standby takes over at once instead of after the TTL.
func (l *shardLog) dropLease(ctx context.Context, rev uint64) error {
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	return l.lease.Delete(rctx, leaseKey, jetstream.LastRevision(rev))
}

// isWrongSequence tells an append refused by the expected-sequence check.
func isWrongSequence(err error) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence {
		return true
	}
	return err != nil && strings.Contains(err.Error(), "wrong last sequence")
}
