package cluster

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// appendFrames appends frames of ops first..last (a frame each, by
// frame ends) to l's log, as a primary's writer does (headers only: the
// snapshot's store reads no frame's bytes), retrying while the new
// stream has no leader.
func appendFrames(t *testing.T, ctx context.Context, l *shardLog, ends ...uint64) {
	t.Helper()
	first := uint64(1)
	for _, last := range ends {
		m := nats.NewMsg(l.names.subject)
		m.Data = []byte("frame")
		m.Header.Set(headerKind, kindFrame)
		m.Header.Set(headerFirstLSN, strconv.FormatUint(first, 10))
		m.Header.Set(headerLSN, strconv.FormatUint(last, 10))
		m.Header.Set(headerNode, "k")
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			_, err := l.js.PublishMsg(ctx, m)
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal(err)
			}
		}
		first = last + 1
	}
}

// snapshotDir is a data directory whose newest snapshot is at op lsn.
func snapshotDir(t *testing.T, lsn uint64) string {
	t.Helper()
	dir := t.TempDir()
	name := filepath.Join(dir, fmt.Sprintf("snapshot-%020d.snap", lsn))
	if err := os.WriteFile(name, []byte(fmt.Sprintf("the state at op %d", lsn)), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestStaleSnapshotNeverReplacesANewerOne: during a takeover the deposed
// primary's snapshot loop ran on (its term's context outlived the lease
// by the server's shutdown, up to 5 s) and compared its snapshot only
// with the LSN it had cached. Its Put of an older snapshot could land
// after the new primary stored a newer one and trimmed the log behind
// it: the store then held a snapshot the log no longer continues, and
// every node that needed it looped on "behind the log". storeSnapshot
// reads the stored snapshot's metadata right before its Put and stores
// nothing older than (or as old as) what is there.
func TestStaleSnapshotNeverReplacesANewerOne(t *testing.T) {
	l := testShardLog(t, "snapstale", 3*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	appendFrames(t, ctx, l, 5, 10)
	// The new primary has stored its snapshot at op 10 (message 2), and
	// its trim is not in yet: the deposed primary's Put races with it.
	// Its loop, its cache at 0, takes its own snapshot at op 5, which the
	// log still holds.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		_, err := l.snaps.Put(ctx, jetstream.ObjectMeta{Name: snapshotObject, Metadata: map[string]string{
			"lsn": "10", "seq": "2", snapshotLogIDKey: l.logID}}, bytes.NewReader([]byte("the state at op 10")))
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
	}
	lsn, err := l.storeSnapshot(ctx, snapshotDir(t, 5), 0)
	stored, serr := l.storedSnapshot(ctx)
	if serr != nil {
		t.Fatal(serr)
	}
	if stored.lsn != 10 || stored.seq != 2 {
		t.Fatalf("a stale primary's snapshot at op 5 (storeSnapshot: %d %v) replaced the stored one at op 10: the store holds op %d (message %d); want op 10 (message 2) kept",
			lsn, err, stored.lsn, stored.seq)
	}
	if lsn != 0 || err != nil {
		t.Fatalf("storeSnapshot of a snapshot older than the stored one: %d %v; want nothing stored (0) and no error", lsn, err)
	}
	// As old as the stored one: nothing stored either (the same op is the
	// same state; its Put would only race with a newer one).
	if lsn, err := l.storeSnapshot(ctx, snapshotDir(t, 10), 0); lsn != 0 || err != nil {
		t.Fatalf("storeSnapshot of the stored snapshot's op again: %d %v; want nothing stored", lsn, err)
	}
}
