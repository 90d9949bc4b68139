package engine

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"time"

	"allot/inventory"
	"allot/journal"
)

// Replication: the engine as a node of a replicated shard (package
// cluster). A replicated engine opens as a standby: it refuses mutations
// with a *NotPrimaryError, serves reads from the state it has, and takes
// the primary's frames through ApplyFrame, which applies them the way
// recovery replays the journal and journals them. Promote makes it the
// primary: from then on the flusher hands every sealed frame to the
// Replicator before it writes it locally, and releases the frame's replies
// only when both are done. A Replicator failure stops the engine (every
// later request is refused), as a journal failure does: an engine never
// acknowledges what the replicated log did not take.
//
// The replicated log is written first and the local journal second, so
// that the local journal is always a prefix of the log: a primary deposed
// between the two leaves nothing behind that the log does not hold, and
// can follow the log again from its own journal after a restart. Writing
// both at once would save the local write's time per batch but leave a
// frame on disk that the shard never committed.
//
// Rejected, measured: appending up to 8 (then 2) frames at once, each
// expecting the sequence of the one before, with a releaser goroutine
// writing and answering them in order. On the 2-core test machine with a
// 3-node JetStream cluster (sync_interval: always), 16 clients at
// pipeline 1 fell from ~2,000 to 454 (714 with 2) ops/s and at pipeline 64
// from ~50,000 to 17,600 (24,700): each message costs the log's servers a
// replicated fdatasync, so many small frames cost more than one frame
// holding everything that arrived during the previous append.
//
// Rejected, measured (2026-11-25): two stages, the flusher appending the
// next frame while a second goroutine wrote, synced and released the
// previous one (one append in flight, the local fdatasync overlapped). A
// test held the local sync and saw the next frame reach the log. Three
// runs each, side by side with this code, 16 workers: pipeline 1 fell from
// 6,501 / 6,629 / 6,444 to 3,662 / 4,576 / 4,408 ops/s and pipeline 64
// from 141K / 155K / 165K to 134K / 147K / 128K. With a frame in the
// second stage the flusher cannot wait for the group it released (those
// clients are not answered yet), so it sealed what had arrived: frames of
// 1 to 8 ops instead of 16, two groups taking turns at the log. At
// pipeline 64 the box is out of CPU (three NATS servers, two standbys
// applying every frame, the primary and the bench on 2 cores), and the
// overlap bought nothing. The log's own append (cluster
// BenchmarkLogAppend) is 1.4 ms for a 512-byte frame with nothing else
// running, so 16 clients at pipeline 1 get at most about 11K ops/s through
// it.

// Replicator appends sealed frames to a shard's replicated log.
//
// Replicate is called by the engine's flusher only, one frame at a time in
// LSN order, with a sealed frame (journal.Seal's or SealAside's, valid
// during the call).
// It returns once the log acknowledged the frame. An error that matches
// ErrUnavailable says the frame is certainly not in the log (another
// primary took over); any other error leaves it unknown. Either way the
// engine stops taking requests.
type Replicator interface {
	Replicate(frame []byte) error
}

// NotPrimaryError answers a mutation sent to a node that is not the
// primary of its shard (a standby, or a primary that lost its lease). It
// matches ErrUnavailable: the request was not applied. Primary and
// PrimaryHTTP are the primary's RESP and HTTP addresses when known.
type NotPrimaryError struct {
	Primary     string
	PrimaryHTTP string
}

func (e *NotPrimaryError) Error() string {
	if e.Primary == "" {
		return "not primary, primary unknown"
	}
	return "not primary, primary at " + e.Primary
}

// Is makes a NotPrimaryError match ErrUnavailable.
func (e *NotPrimaryError) Is(target error) bool { return target == ErrUnavailable }

// checkStandbyLocked says why a standby's operation cannot run, if it
// cannot: the engine is closed, stopped, or not a standby.
func (e *Engine) checkStandbyLocked() error {
	switch {
	case e.closed:
		return ErrClosed
	case e.failure != nil:
		return refused(e.failure)
	case e.standby == nil:
		return errors.New("engine: the engine is not a standby (a primary or a single node)")
	}
	return nil
}

// SetPrimary sets the addresses a standby names in its NotPrimaryError.
// It does nothing on a primary.
func (e *Engine) SetPrimary(resp, http string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.standby != nil {
		e.standby = &NotPrimaryError{Primary: resp, PrimaryHTTP: http}
	}
}

// Standby reports whether the engine is a standby.
func (e *Engine) Standby() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.standby != nil
}

// submitStandbyLocked answers r on a standby: a read runs on the state
// as the applied frames left it, a mutation is refused. It unlocks mu.
func (e *Engine) submitStandbyLocked(r *Request) {
	switch {
	case r.fn != nil:
		r.fn(e.state)
	case r.Op.Kind.Mutates():
		np := *e.standby
		r.Err = &np
	default:
		r.Result = e.state.Apply(&r.Op, r.Lines)
		if r.Result.Lines != nil {
			r.Lines = r.Result.Lines
		}
	}
	e.mu.Unlock()
	r.releaseNow()
}

// decodeFrame decodes the count ops of a frame's payload, the first being
// op first. It uses the engine's one frame decoder, whose intern table
// (bounded: inventory.NewFollowDecoder) keeps the rows' identifiers from
// frame to frame; a decoder per frame allocated them again for every frame
// and grew a table for each (a fifth of a standby's CPU, with the garbage
// collector's share).
func (e *Engine) decodeFrame(first uint64, count uint32, payload []byte) ([]inventory.Op, error) {
	e.frameMu.Lock()
	defer e.frameMu.Unlock()
	if e.frameDec == nil {
		e.frameDec = inventory.NewFollowDecoder()
	}
	d := e.frameDec
	d.Reset(payload)
	d.Version = journal.FrameVersion
	ops := make([]inventory.Op, count)
	for i := range ops {
		if err := d.Op(&ops[i]); err != nil {
			return nil, fmt.Errorf("engine: apply frame: op %d: %w", first+uint64(i), err)
		}
	}
	if !d.Done() {
		return nil, fmt.Errorf("engine: apply frame: bytes after the frame's last op (op %d)", first+uint64(count)-1)
	}
	return ops, nil
}

// Promote makes a standby the primary: the local journal is made durable
// (a standby writes the frames it applies without syncing them: the log
// holds them), and from now on every frame goes to rep before it is
// acknowledged. The caller must hold the shard's lease and have applied
// every frame of the log.
func (e *Engine) Promote(rep Replicator) error {
	if rep == nil {
		return errors.New("engine: promote: no replicator given")
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.checkStandbyLocked(); err != nil {
		return err
	}
	if err := e.journal.Sync(); err != nil {
		e.failLocked(err)
		return err
	}
	e.replica = rep
	e.standby = nil
	return nil
}

// SetLeaseUntil bounds how long a primary serves: from until on (a
// time.Now() reading, so monotonic) its lease may have lapsed and another
// node taken over, and its state may be stale. Its next request, read or
// write, stops it as a failed append does: that request and every later
// one is refused (ErrUnavailable, a NotPrimaryError). The caller moves
// until forward with each renewal of the lease; a zero until, the
// default, bounds nothing. A standby ignores it until it is promoted.
//
// The log's sequence check already refuses a deposed primary's writes; a
// read, an idempotent repeat or an op that changes nothing writes no frame
// and would be answered from the state alone, so it is this bound that
// keeps them from a deposed primary's stale state.
func (e *Engine) SetLeaseUntil(until time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.leaseUntil = until
}

// errLeaseLapsed is the failure of a primary past its lease bound
// (SetLeaseUntil). It stops the engine as a journal failure does, but its
// log line and its refusals name the lease: nothing is wrong with the
// journal, and "journal failed" sent an operator looking for a disk
// fault on a node that only stepped down.
var errLeaseLapsed = errors.New("engine: the primary's lease lapsed")

// checkLeaseLocked stops a primary whose lease may have lapsed
// (SetLeaseUntil).
func (e *Engine) checkLeaseLocked() {
	if e.replica == nil || e.failure != nil || e.leaseUntil.IsZero() || time.Now().Before(e.leaseUntil) {
		return
	}
	e.failLocked(fmt.Errorf("%w (no renewal succeeded in time; it was trusted until %s): %w",
		errLeaseLapsed, e.leaseUntil.Format("15:04:05.000"), &NotPrimaryError{}))
}

// ApplyFrame applies a frame of the primary's journal (the bytes its
// journal.Seal returned) to a standby: its ops are replayed as recovery
// replays them, each must change state, and the frame is journaled here
// unchanged. A frame wholly at or before the applied LSN is skipped (it
// returns nil); a frame that does not start right after it is refused with
// the state unchanged. A frame whose ops do not replay, or that the
// journal encodes differently, stops the engine: the replicas diverged.
func (e *Engine) ApplyFrame(frame []byte) error {
	first, count, stamp, payload, err := parseSealedFrame(frame)
	if err != nil {
		return err
	}
	ops, err := e.decodeFrame(first, count, payload)
	if err != nil {
		return err
	}

	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.checkStandbyLocked(); err != nil {
		return err
	}
	next := e.journal.NextLSN()
	if first+uint64(count) <= next {
		return nil
	}
	if first != next {
		return fmt.Errorf("engine: apply frame: it starts at op %d, the state is at op %d", first, next-1)
	}
	e.state.SetTime(stamp)
	e.journal.SetStamp(stamp)
	// The primary's window is not in the frame, and its ops were new
	// under it: they replay under the shortest window, as in recovery
	// (inventory.ReplayRetentionMS); the standby's own rules its reads.
	e.state.SetRetention(inventory.ReplayRetentionMS)
	defer e.state.SetRetention(e.cfg.Retention.Milliseconds())
	var lines []inventory.Line
	for i := range ops {
		res := e.state.Apply(&ops[i], lines)
		if !res.Changed {
			err := fmt.Errorf("engine: apply frame: op %d (%s) does not replay: %s %s", first+uint64(i), ops[i].Kind, res.Code, res.Detail)
			e.failLocked(err)
			return err
		}
		lines = res.Lines
		e.journal.Add(&ops[i])
	}
	e.opsSinceSnap += int64(count)
	e.journaled += int64(count)
	sealed := e.journal.Seal()
	if !bytes.Equal(sealed, frame) {
		err := fmt.Errorf("engine: apply frame: ops %d..%d journal differently here than on the primary", first, first+uint64(count)-1)
		e.failLocked(err)
		return err
	}
	if err := e.journal.WriteFrame(sealed); err != nil {
		e.failLocked(err)
		return err
	}
	e.published(sealed)
	// Free what the primary frees as its clock moves (State.Collect): finished
	// holds and keys past the window, under this node's own window (its
	// reads' rule, and the one it keeps if it takes over). Without it a
	// standby kept every key and finished hold it ever applied.
	e.state.SetRetention(e.cfg.Retention.Milliseconds())
	e.state.Collect()
	if e.opsSinceSnap >= e.cfg.SnapshotEveryOps && !e.kicked {
		// The flusher takes the snapshot (the frame is written: a frame
		// boundary).
		e.kicked = true
		select {
		case e.kick <- struct{}{}:
		default:
		}
	}
	return nil
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// parseSealedFrame checks a version 2 frame as journal.Seal makes it (see
// journal/record.go: magic, payload length, CRC32C of everything after
// it, version, flags, op count, first LSN, stamp, payload) and returns its
// fields. A frame from the network is checked before any of it is applied.
func parseSealedFrame(frame []byte) (first uint64, count uint32, stamp int64, payload []byte, err error) {
	const headerSize, magicV2 = 36, 0x766c6c61
	if len(frame) < headerSize {
		return 0, 0, 0, nil, fmt.Errorf("engine: apply frame: %d bytes, shorter than a frame header", len(frame))
	}
	if binary.LittleEndian.Uint32(frame) != magicV2 {
		return 0, 0, 0, nil, errors.New("engine: apply frame: no version 2 frame magic")
	}
	if n := binary.LittleEndian.Uint32(frame[4:]); int(n) != len(frame)-headerSize {
		return 0, 0, 0, nil, fmt.Errorf("engine: apply frame: the header says %d payload bytes, the frame has %d", n, len(frame)-headerSize)
	}
	if crc32.Checksum(frame[12:], castagnoli) != binary.LittleEndian.Uint32(frame[8:]) {
		return 0, 0, 0, nil, errors.New("engine: apply frame: checksum mismatch")
	}
	if v := binary.LittleEndian.Uint16(frame[12:]); v != journal.FrameVersion {
		return 0, 0, 0, nil, fmt.Errorf("engine: apply frame: format version %d, this release writes %d", v, journal.FrameVersion)
	}
	count = binary.LittleEndian.Uint32(frame[16:])
	first = binary.LittleEndian.Uint64(frame[20:])
	stamp = int64(binary.LittleEndian.Uint64(frame[28:]))
	if count == 0 || first == 0 {
		return 0, 0, 0, nil, fmt.Errorf("engine: apply frame: %d ops from op %d", count, first)
	}
	return first, count, stamp, frame[headerSize:], nil
}

// replicate hands frame to rep for the flusher and classifies a failure
// for the frame's replies: ErrUnavailable when the log certainly did not
// take it, ErrOutcomeUnknown otherwise. A failure stops the engine.
func (e *Engine) replicate(rep Replicator, frame []byte) error {
	err := rep.Replicate(frame)
	if err == nil {
		return nil
	}
	e.fail(err)
	if errors.Is(err, ErrUnavailable) {
		return err
	}
	return unknownOutcome(err)
}
