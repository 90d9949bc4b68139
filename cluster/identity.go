package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"allot/vfs"
)

// logIdentity names one shard's log: its stream and the log id the node
// that created the stream put in its metadata (logIDKey). A stream deleted
// and made again under the same name (a cluster made anew, a test's shard
// reused) is another log with another history, though its sequences and
// LSNs look alike.
//
// A node's data directory keeps the identity of the log its journal
// follows (identityFile), written before the node applies anything. The
// LSN checks of seqAfter catch a journal that runs past the log; this
// catches the rest: a journal of another shard, or of a log deleted since,
// whose last op falls inside the log's range. Without it such a node
// followed the log from there, applying the shard's frames on top of
// another history: a replica whose counts differ from the primary's,
// silently, and which could be promoted.
//
// The identity was once the stream's creation time as JetStream reports
// it: each NATS server keeps its own for its replica, and one restarted
// reads it back differently, so that after a NATS restart and a leader
// change a node refused its own directory. A record of that kind
// (Created, no ID) is taken for the log of its stream name once, and
// rewritten.
type logIdentity struct {
	Stream  string    `json:"stream"`
	ID      string    `json:"log_id,omitempty"`
	Created time.Time `json:"created,omitzero"` // an earlier record's; see above
}

// logIDKey is the stream metadata key of the log id.
const logIDKey = "allot_log_id"

// newLogID returns a random log id.
func newLogID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("cluster: no randomness for a log id: " + err.Error())
	}
	return hex.EncodeToString(b[:])
}

func (a logIdentity) equal(b logIdentity) bool {
	return a.Stream == b.Stream && a.ID == b.ID
}

func (a logIdentity) String() string {
	if a.ID == "" {
		return fmt.Sprintf("%s created %s", a.Stream, a.Created.UTC().Format(time.RFC3339Nano))
	}
	return fmt.Sprintf("%s (log id %s)", a.Stream, a.ID)
}

// identityFile is the identity's file in a node's data directory.
const identityFile = "cluster-log.json"

// identity returns the log's identity as JetStream reports it now.
func (l *shardLog) identity(ctx context.Context) (logIdentity, error) {
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	info, err := l.stream.Info(rctx)
	if err != nil {
		return logIdentity{}, fmt.Errorf("cluster: stream %s info: %w", l.names.stream, err)
	}
	id := info.Config.Metadata[logIDKey]
	if id == "" {
		return logIdentity{}, fmt.Errorf("cluster: stream %s has no %s in its metadata", l.names.stream, logIDKey)
	}
	return logIdentity{Stream: info.Config.Name, ID: id}, nil
}

// errOtherLog: the data directory's journal follows another log than the
// shard's; errUnnamedLog: it holds ops and names no log.
var (
	errOtherLog   = errors.New("cluster: the data directory follows another log")
	errUnnamedLog = errors.New("cluster: the data directory holds ops and names no shard log")
)

// checkIdentity checks that the data directory dir, whose journal ends at
// op lsn, follows the log id, and records id there when the directory
// holds nothing yet. A directory that holds ops of another log, or ops and
// no identity (a single node's, or one whose identity file was removed),
// is refused: the node must start on an empty directory and catch up from
// the log.
func checkIdentity(dir string, id logIdentity, lsn uint64) error {
	name := filepath.Join(dir, identityFile)
	b, err := os.ReadFile(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if lsn > 0 {
			return fmt.Errorf("%w: %s holds ops 1..%d and no %s; start the node on an empty data directory, and it catches up from the log (a cluster cannot be seeded from an existing data directory)",
				errUnnamedLog, dir, lsn, identityFile)
		}
		return writeIdentity(dir, id)
	case err != nil:
		return fmt.Errorf("cluster: read %s: %w", name, err)
	}
	var had logIdentity
	if err := json.Unmarshal(b, &had); err != nil || had.Stream == "" || (had.ID == "" && had.Created.IsZero()) {
		return fmt.Errorf("cluster: %s is not a log identity (%q): remove the data directory and start the node again, and it catches up from the log", name, b)
	}
	if had.equal(id) {
		return nil
	}
	if had.ID == "" && had.Stream == id.Stream {
		return writeIdentity(dir, id) // an earlier record, by creation time: see logIdentity
	}
	if lsn == 0 {
		return writeIdentity(dir, id) // it holds nothing of the other log
	}
	return fmt.Errorf("%w: %s holds ops 1..%d of the log %s, and this shard's log is %s (a log deleted and made anew, or another shard's); start the node on an empty data directory, and it catches up from the log",
		errOtherLog, dir, lsn, had, id)
}

// writeIdentity writes id into dir durably (vfs.WriteFileAtomic).
func writeIdentity(dir string, id logIdentity) error {
	b, err := json.Marshal(id)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	if err := vfs.WriteFileAtomic(vfs.OS{}, filepath.Join(dir, identityFile), append(b, '\n')); err != nil {
		return fmt.Errorf("cluster: record the log's identity in %s: %w", dir, err)
	}
	return nil
}
