package ingest_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"allot/catalog"
	"allot/ingest"
)

// stuckSink is an allot that answers nothing until the caller gives up.
type stuckSink struct{}

func (stuckSink) CatalogSet(ctx context.Context, _ catalog.Record, _ string) error {
	<-ctx.Done()
	return ctx.Err()
}

func (stuckSink) CatalogDel(ctx context.Context, _, _ string) (bool, error) {
	<-ctx.Done()
	return false, ctx.Err()
}

// TestAudit12SnapshotEndsWhenCancelled: SIGTERM (or Ctrl-C) during a
// snapshot hung the ingester: the workers returned at the end of the
// context, and the reader blocked for ever handing them the next row.
func TestAudit12SnapshotEndsWhenCancelled(t *testing.T) {
	_, ctx, db := mariaDBSource(t, 2*time.Minute)
	table := fmt.Sprintf("ingest_cancel12_%d", time.Now().UnixNano())
	if _, err := db.ExecContext(ctx, "CREATE TABLE `"+table+"` ("+columns12+")"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// A hung snapshot's transaction holds the table's metadata lock.
		if conn, err := db.Conn(context.Background()); err == nil {
			conn.ExecContext(context.Background(), "SET SESSION lock_wait_timeout = 5")
			conn.ExecContext(context.Background(), "DROP TABLE IF EXISTS `"+table+"`")
			conn.Close()
		}
	})
	var vals []string
	for i := range 100 {
		vals = append(vals, fmt.Sprintf("('C%03d', 'Titel', 'Acme')", i))
	}
	if _, err := db.ExecContext(ctx, "INSERT INTO `"+table+"` VALUES "+strings.Join(vals, ",")); err != nil {
		t.Fatal(err)
	}
	cfg := ingest.Config{DSN: replDSN(), Table: table, SKUColumn: "id", TitleColumn: "name", BrandColumn: "brand",
		Addr: "127.0.0.1:1", StateFile: filepath.Join(t.TempDir(), "state.json"), ServerID: uint32(1_800_000 + time.Now().UnixNano()/1000%1_000_000),
		SnapshotWorkers: 1}
	in, err := ingest.New(cfg, stuckSink{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- in.Run(rctx) }()
	// One row with the worker, four queued, one more read: the reader
	// waits to hand it over.
	deadline := time.Now().Add(30 * time.Second)
	for in.Metrics.Snapshot.Load() < 6 {
		if time.Now().After(deadline) {
			t.Fatalf("the snapshot read %d rows in 30 s", in.Metrics.Snapshot.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Run returned %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return within 5 s of its context's end: the snapshot hangs")
	}
}
