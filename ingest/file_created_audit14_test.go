package ingest_test

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"allot/client"
	"allot/server/servertest"
	"allot/store"
	"allot/store/remote"
)

// The checkpoint says when its binlog file was created, so that a file of
// the same name created anew (RESET MASTER, a rebuilt server) is refused.
// But a checkpoint learnt that only at the next transaction boundary: the
// one a snapshot wrote, and the one at the start of a file the source
// rotated to, said nothing of it, and on a quiet source went on saying
// nothing; resumed from there, any file of that name was taken.

// waitFileCreated waits up to 5 s for the checkpoint to be in file and to
// say when that was created, and returns the checkpoint.
func waitFileCreated(t *testing.T, in *ingester, state, file string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		m := stateFields(t, state)
		if c, _ := m["file_created"].(float64); c != 0 && m["file"] == file {
			return m
		}
		if time.Now().After(deadline) {
			t.Fatalf("the checkpoint %v does not say when %s was created; the ingester's log:\n%s", m, file, in.logText())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestAudit14CheckpointLearnsWhenItsFileWasCreated: on a source of the
// test's own, where nothing else is written, the checkpoint after the
// snapshot, and the one at the start of the file a FLUSH BINARY LOGS
// rotates to, come to say when their file was created, without a
// transaction after them.
func TestAudit14CheckpointLearnsWhenItsFileWasCreated(t *testing.T) {
	bin := servertest.BuildAllot(t)
	port := startOwnMariaDB(t)
	db, err := sql.Open("mysql", fmt.Sprintf("root@tcp(127.0.0.1:%d)/", port))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	for _, q := range []string{
		"CREATE DATABASE allot",
		"CREATE TABLE allot.products (" + columns12 + ") ENGINE=InnoDB",
		"INSERT INTO allot.products VALUES ('S1', 'Eins', 'Acme')",
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	dir := t.TempDir()
	allot, err := remote.StartProcess(t.Context(), bin, store.Config{DataDir: filepath.Join(dir, "data"), Durability: store.DurabilityWrite})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { allot.Stop(30 * time.Second) })
	r := &rig{t: t, bin: bin, dir: dir, table: "products", state: filepath.Join(dir, "state.json"), allot: allot}
	if r.c, err = client.New(client.Config{Addr: allot.Addr(), PoolSize: 1}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.c.Close() })
	in := r.ingest12(fmt.Sprintf("allot_repl:allot_repl@tcp(127.0.0.1:%d)/allot", port), "--server-id", "7")
	r.waitSnapshot(in, 30*time.Second)
	r.waitRecord(in, "S1", "Eins|Acme|[]")
	snapshot := readState(t, r.state)
	first := waitFileCreated(t, in, r.state, snapshot.File)
	if first["pos"] != float64(snapshot.Pos) {
		t.Errorf("the checkpoint moved from the snapshot's %+v to %v on a source where nothing was written", snapshot, first)
	}

	time.Sleep(1100 * time.Millisecond) // the next file's creation, in seconds, differs
	if _, err := db.Exec("FLUSH BINARY LOGS"); err != nil {
		t.Fatal(err)
	}
	var next string
	var pos, doDB, ignoreDB any
	if err := db.QueryRow("SHOW MASTER STATUS").Scan(&next, &pos, &doDB, &ignoreDB); err != nil {
		t.Fatal(err)
	}
	rotated := waitFileCreated(t, in, r.state, next)
	if rotated["file_created"].(float64) <= first["file_created"].(float64) {
		t.Errorf("the checkpoint at the start of %s says it was created at %v, %s at %v", next, rotated["file_created"], snapshot.File, first["file_created"])
	}
}
