package cluster

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// otherLogSnapshot stores, under the shard's snapshot object, what a
// stream deleted and made anew leaves in the object store: a snapshot of
// the old log, at an op far past anything the new log reaches.
//
// The object store was just made, R3: until its stream has a leader a
// put finds no responders, so the put is retried for a while.
func otherLogSnapshot(t *testing.T, ctx context.Context, os jetstream.ObjectStore) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := os.Put(ctx, jetstream.ObjectMeta{Name: snapshotObject, Metadata: map[string]string{
			"lsn": "1000000000", "seq": "900", snapshotLogIDKey: "0123456789abcdef0123456789abcdef"}},
			bytes.NewReader([]byte("the old log's snapshot")))
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// A snapshot of another log is no snapshot of this one: storedSnapshot
// reports none (so the primary stores its own, and trims), and a node
// that finds the log trimmed with only that one stored is refused with an
// error naming it, and nothing is installed. A snapshot that names no log
// (stored before snapshots named theirs) is taken for the shard's.
func TestSnapshotOfAnotherLog(t *testing.T) {
	l := testShardLog(t, "otherlog", 3*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if l.logID == "" {
		t.Fatal("the shard log knows no log id after create")
	}
	otherLogSnapshot(t, ctx, l.snaps)
	stored, err := l.storedSnapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if stored.lsn != 0 || stored.otherLog == "" {
		t.Fatalf("another log's snapshot read as %+v; want none (lsn 0) and its log named", stored)
	}
	dir := t.TempDir()
	if _, err := l.installSnapshot(ctx, dir); err == nil || !strings.Contains(err.Error(), "another log") {
		t.Fatalf("installing another log's snapshot: %v; want a refusal naming another log", err)
	}
	// A message appended and trimmed: the log holds nothing, ends past 0.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		_, err := l.js.Publish(ctx, l.names.subject, []byte("x"))
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
	}
	if err := l.stream.Purge(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := l.seqAfter(ctx, 0); err == nil || !strings.Contains(err.Error(), "another log") {
		t.Fatalf("a trimmed log with another log's snapshot: seqAfter(0) = %v; want a refusal (following from the end skips every op)", err)
	}

	if _, err := l.snaps.Put(ctx, jetstream.ObjectMeta{Name: snapshotObject, Metadata: map[string]string{
		"lsn": "77", "seq": "5"}}, bytes.NewReader([]byte("an earlier snapshot"))); err != nil {
		t.Fatal(err)
	}
	if stored, err := l.storedSnapshot(ctx); err != nil || stored.lsn != 77 || stored.seq != 5 {
		t.Fatalf("a snapshot naming no log: %+v, %v; want it taken (lsn 77, seq 5)", stored, err)
	}
}

// A primary whose object store holds another log's snapshot (its stream
// deleted and made anew) stores its own snapshots and trims its log; a
// fresh node catches up from them. Before snapshots named their log, the
// old one, at an op far ahead, was never replaced: the log was never
// trimmed.
func TestSnapshotsAfterTheStreamWasMadeAnew(t *testing.T) {
	c := newShardCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	os, err := c.js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{
		Bucket: c.names.snaps, Storage: jetstream.FileStorage, Replicas: 3})
	if err != nil {
		t.Fatal(err)
	}
	otherLogSnapshot(t, ctx, os)
	catchUpFromSnapshot(t, c)
}
