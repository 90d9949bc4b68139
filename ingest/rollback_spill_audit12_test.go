package ingest_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"allot/ingest"
)

// TestAudit12RollbackOfRowsAlreadySent: a transaction longer than the
// ingester holds back is sent as it comes; when it then rolls back rows
// already sent, the ingester stops, saying the catalog holds rows the
// source took back, rather than go on.
func TestAudit12RollbackOfRowsAlreadySent(t *testing.T) {
	r, side := rollbackRig(t)
	cfg := ingest.Config{DSN: replDSN(), Table: r.table, SKUColumn: "id", TitleColumn: "name", BrandColumn: "brand",
		Addr: r.allot.Addr(), StateFile: r.state, CheckpointEvery: 100 * time.Millisecond}
	in, err := ingest.New(cfg, r.c, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	ingest.SetTransactionRowsMax(in, 1)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- in.Run(ctx) }()
	deadline := time.Now().Add(30 * time.Second)
	for r.record("K0") == "none" {
		if time.Now().After(deadline) {
			t.Fatal("no snapshot in 30 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	tbl := "`" + r.table + "`"
	runTx(t, r, "BEGIN", "INSERT INTO "+tbl+" VALUES ('K6', 'Sechs', 'Acme')", "SAVEPOINT s",
		"INSERT INTO `"+side+"` VALUES (3)", "INSERT INTO "+tbl+" VALUES ('K7', 'Sieben', 'Acme')",
		"INSERT INTO "+tbl+" VALUES ('K8', 'Acht', 'Acme')", "ROLLBACK TO s", "COMMIT")
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "rolled back") || !strings.Contains(err.Error(), "snapshot") {
			t.Errorf("Run returned %v; want an error saying rows sent were rolled back and a new snapshot is needed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the ingester went on after a rollback of rows it had sent")
	}
}
