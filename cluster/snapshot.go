package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"allot/journal"
	"allot/vfs"
)

// Snapshots in the object store: the primary stores the newest snapshot
// file its engine wrote (the same bytes), with the op it ends at, and
// trims the log behind it; a node whose journal ends before the log's
// start installs it before it opens its engine.

// storedSnapshot describes the snapshot in the object store; lsn 0 when
// there is none, or when the one stored is of another log (otherLog).
//
// A snapshot names the log it was taken of (snapshotLogIDKey, the
// stream's log id: logIdentity). The object store outlives a stream
// deleted and made anew under the shard's name; its snapshot then holds
// another history at LSNs the new log reuses. Taken for this log's, it
// stopped every later snapshot from being stored (none was newer), so the
// log was never trimmed, and a node installing it would have followed the
// new log from the old history's op. A snapshot stored before snapshots
// named their log names none, and is taken for the shard's.
type storedSnapshot struct {
	lsn      uint64
	seq      uint64 // the log's message that holds op lsn (trimmed with it)
	otherLog string // the log id of a stored snapshot of another log
}

// snapshotLogIDKey is the snapshot's metadata key of its log's id.
const snapshotLogIDKey = "log_id"

func (l *shardLog) storedSnapshot(ctx context.Context) (storedSnapshot, error) {
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	info, err := l.snaps.GetInfo(rctx, snapshotObject)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return storedSnapshot{}, nil
	}
	if err != nil {
		return storedSnapshot{}, fmt.Errorf("cluster: stored snapshot info: %w", err)
	}
	if id := info.Metadata[snapshotLogIDKey]; id != "" && id != l.logID {
		return storedSnapshot{otherLog: id}, nil
	}
	lsn, err1 := strconv.ParseUint(info.Metadata["lsn"], 10, 64)
	seq, err2 := strconv.ParseUint(info.Metadata["seq"], 10, 64)
	if err1 != nil || err2 != nil {
		return storedSnapshot{}, fmt.Errorf("cluster: the stored snapshot's metadata %v has no valid lsn and seq", info.Metadata)
	}
	return storedSnapshot{lsn: lsn, seq: seq}, nil
}

// newestSnapshotFile returns the newest snapshot file of a data directory
// and its LSN (journal/snapshot.go names them snapshot-<LSN>.snap).
func newestSnapshotFile(dir string) (string, uint64, error) {
	names, err := os.ReadDir(dir)
	if err != nil {
		return "", 0, fmt.Errorf("cluster: list %s: %w", dir, err)
	}
	var best string
	var bestLSN uint64
	for _, d := range names {
		n := d.Name()
		if !strings.HasPrefix(n, "snapshot-") || !strings.HasSuffix(n, ".snap") {
			continue
		}
		lsn, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(n, "snapshot-"), ".snap"), 10, 64)
		if err == nil && lsn > bestLSN {
			best, bestLSN = filepath.Join(dir, n), lsn
		}
	}
	return best, bestLSN, nil
}

// storeSnapshot stores the data directory's newest snapshot if it is newer
// than the stored one, then trims the log behind it. It returns the LSN
// stored (0: nothing new).
//
// stored is the caller's cached LSN of the stored snapshot; the store's
// own is read again right before the Put. During a takeover the deposed
// primary's Put of an older snapshot could otherwise land after the new
// primary stored a newer one and trimmed the log behind it: the store
// then held a snapshot the log no longer continues, and a node that
// needed it looped on errBehindLog until the next snapshot. (A Put
// already in flight when the newer one lands is not caught; the node
// stops its snapshot loop when its lease is lost (node.term), before any
// other node can take the lease, which bounds that to one request.)
func (l *shardLog) storeSnapshot(ctx context.Context, dir string, stored uint64) (uint64, error) {
	name, lsn, err := newestSnapshotFile(dir)
	if err != nil || lsn <= stored {
		return 0, err
	}
	data, err := os.ReadFile(name)
	if err != nil {
		// A newer snapshot replaced it since the listing: the next poll
		// takes that one.
		return 0, nil
	}
	seq, err := l.seqAfter(ctx, lsn-1)
	if errors.Is(err, errBehindLog) {
		// Trimmed behind this very snapshot: stored once, and set back
		// since by an older one (node.storeSnapshots).
		seq, err = l.trimmedAt(ctx, lsn)
	} else if err == nil {
		var m *jetstream.RawStreamMsg
		if m, err = l.get(ctx, seq); err != nil {
			return 0, err
		}
		if last, err := lsnOf(m.Header, headerLSN); err != nil || last != lsn {
			return 0, fmt.Errorf("cluster: snapshot at op %d is not at a frame boundary of the log (message %d ends at op %d)", lsn, seq, last)
		}
	}
	if err != nil {
		return 0, fmt.Errorf("cluster: find op %d in the log: %w", lsn, err)
	}
	now, err := l.storedSnapshot(ctx)
	if err != nil {
		return 0, err
	}
	if now.lsn >= lsn {
		return 0, nil // another primary stored one as new, or newer
	}
	rctx, cancel := context.WithTimeout(ctx, 4*requestTimeout)
	defer cancel()
	_, err = l.snaps.Put(rctx, jetstream.ObjectMeta{Name: snapshotObject, Metadata: map[string]string{
		"lsn": strconv.FormatUint(lsn, 10), "seq": strconv.FormatUint(seq, 10), snapshotLogIDKey: l.logID}}, bytes.NewReader(data))
	if err != nil {
		return 0, fmt.Errorf("cluster: store snapshot at op %d: %w", lsn, err)
	}
	if err := l.stream.Purge(rctx, jetstream.WithPurgeSequence(seq+1)); err != nil {
		return lsn, fmt.Errorf("cluster: trim the log behind message %d: %w", seq, err)
	}
	return lsn, nil
}

// trimmedAt returns the sequence of the message that ended at op lsn when
// the log was trimmed right behind it: the log's first message then
// starts at op lsn+1 (a frame) or is a fence after op lsn. Otherwise it
// fails with errBehindLog.
func (l *shardLog) trimmedAt(ctx context.Context, lsn uint64) (uint64, error) {
	first, last, err := l.position(ctx)
	if err != nil {
		return 0, err
	}
	if first <= 1 || last < first {
		return 0, errBehindLog
	}
	m, err := l.get(ctx, first)
	if err != nil {
		return 0, err
	}
	name := headerLSN
	want := lsn
	if m.Header.Get(headerKind) == kindFrame {
		name, want = headerFirstLSN, lsn+1
	}
	if v, err := lsnOf(m.Header, name); err != nil || v != want {
		return 0, errBehindLog
	}
	return first - 1, nil
}

// installSnapshot writes the stored snapshot into dir, where the engine's
// recovery finds it (the engine must be closed). It returns its LSN.
//
// The file is named by the LSN the fetched bytes hold, not by the
// metadata read before them: the primary may store a newer snapshot in
// between, and a file whose name and contents disagree is corruption to
// the engine's recovery (the node would stop, and stop again at every
// start).
func (l *shardLog) installSnapshot(ctx context.Context, dir string) (uint64, error) {
	stored, err := l.storedSnapshot(ctx)
	if err != nil {
		return 0, err
	}
	if stored.lsn == 0 {
		return 0, noSnapshot(stored)
	}
	rctx, cancel := context.WithTimeout(ctx, 4*requestTimeout)
	defer cancel()
	data, err := l.snaps.GetBytes(rctx, snapshotObject)
	if err != nil {
		return 0, fmt.Errorf("cluster: fetch the stored snapshot: %w", err)
	}
	lsn, err := journal.SnapshotLSN(snapshotObject, data)
	if err != nil {
		return 0, fmt.Errorf("cluster: the stored snapshot: %w", err)
	}
	if lsn < stored.lsn {
		return 0, fmt.Errorf("cluster: the stored snapshot holds op %d, older than its metadata's %d", lsn, stored.lsn)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, fmt.Errorf("cluster: %w", err)
	}
	final := filepath.Join(dir, fmt.Sprintf("snapshot-%020d.snap", lsn))
	if err := vfs.WriteFileAtomic(vfs.OS{}, final, data); err != nil {
		return 0, fmt.Errorf("cluster: install the stored snapshot in %s: %w", dir, err)
	}
	return lsn, nil
}

// noSnapshot is the error of a trimmed log with no snapshot of its own
// stored (stored.lsn is 0): no node can catch up from it.
func noSnapshot(stored storedSnapshot) error {
	if stored.otherLog != "" {
		return fmt.Errorf("cluster: the log is trimmed and the stored snapshot is of another log (log id %s): its stream was deleted and made anew, or trimmed by hand; delete the shard's stream and object store, and start the nodes on empty data directories", stored.otherLog)
	}
	return errors.New("cluster: the log is trimmed but no snapshot is stored")
}
