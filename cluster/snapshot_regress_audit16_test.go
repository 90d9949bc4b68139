package cluster

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"allot/engine"
)

// TestPrimaryRestoresAStoreAStalePutSetBack: a deposed primary's Put of
// an older snapshot can land after the new primary stored a newer one
// and trimmed the log behind it. storeSnapshot's check before its Put
// does not stop it: the object store's Put returns when its context ends
// (the lease lost) without taking back its meta message, which a NATS
// connection cut off from the cluster buffers and sends once it is back.
// The store then holds a snapshot the log no longer continues, and every
// node that needs one (restarted from empty, down for long) looped on
// "behind the log" until the next snapshot, millions of ops away on a
// busy shard, never on a quiet one. The primary must notice and store
// its own again.
func TestPrimaryRestoresAStoreAStalePutSetBack(t *testing.T) {
	l := testShardLog(t, "snapback", 3*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	appendFrames(t, ctx, l, 10, 20, 30)
	dir := snapshotDir(t, 20)
	// The primary stores its snapshot at op 20 (message 2) and trims the
	// log behind it.
	if lsn, err := l.storeSnapshot(ctx, dir, 0); lsn != 20 || err != nil {
		t.Fatalf("store the snapshot at op 20: %d %v", lsn, err)
	}
	n := &node{cfg: Config{Engine: engine.Config{Dir: dir}, SnapshotPoll: 50 * time.Millisecond}, log: l,
		logger: slog.New(slog.DiscardHandler)}
	loop, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); n.storeSnapshots(loop) }()
	defer func() { stop(); <-done }()
	time.Sleep(200 * time.Millisecond) // the loop has read the store
	// The deposed primary's Put of its snapshot at op 10 lands late.
	if _, err := l.snaps.Put(ctx, jetstream.ObjectMeta{Name: snapshotObject, Metadata: map[string]string{
		"lsn": "10", "seq": "1", snapshotLogIDKey: l.logID}}, bytes.NewReader(snapshotBytes(t, 10))); err != nil {
		t.Fatal(err)
	}
	var stored storedSnapshot
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		s, err := l.storedSnapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if stored = s; s.lsn == 20 {
			break
		}
	}
	if stored.lsn != 20 || stored.seq != 2 {
		t.Fatalf("the store holds op %d (message %d) 5 s after a stale Put set it back; the log starts after message 2 (op 20): want the snapshot at op 20 stored again",
			stored.lsn, stored.seq)
	}
	// And a node that needs it finds the log continuing it.
	if seq, err := l.seqAfter(ctx, stored.lsn); err != nil || seq != 3 {
		t.Fatalf("after the stored snapshot the log continues at message %d (%v); want 3", seq, err)
	}
}

// snapshotBytes is snapshotDir's file's contents.
func snapshotBytes(t *testing.T, lsn uint64) []byte {
	t.Helper()
	name, _, err := newestSnapshotFile(snapshotDir(t, lsn))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
