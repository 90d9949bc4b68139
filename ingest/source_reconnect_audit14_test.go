package ingest_test

import (
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"allot/client"
	"allot/ingest"
	"allot/server/servertest"
	"allot/store"
	"allot/store/remote"
)

// The checkpoint names the source it was taken on, and an ingester whose
// checkpoint names another refused to start. But it read the source's
// identity at start only: after a lost connection it dialled the DSN again
// and resumed at its binlog position on whatever server answered there
// now (a failover, a proxy pointed elsewhere), where that position names
// other events. The binlog file's creation time did not catch it when the
// checkpoint did not know it yet (right after a snapshot, or at the start
// of a file the source rotated to).

// redirect points the proxy at target from the next connection on, and
// cuts the ones it carries: the DSN reaches another server.
func (p *binlogProxy) redirect(target string) {
	p.mu.Lock()
	p.target = target
	p.mu.Unlock()
	p.cutAll()
}

// TestAudit14ReconnectToAnotherSourceIsRefused: two MariaDBs of the test's
// own, server ids 1 and 2, with the same table and the same statements
// (so that their binary logs stand at the same file and position). The
// ingester takes its snapshot of the first through a proxy; the connection
// drops and the proxy now reaches the second, where a row is inserted. The
// ingester stops, naming both servers and what to do, sends nothing of the
// second's, and leaves its checkpoint where it was.
func TestAudit14ReconnectToAnotherSourceIsRefused(t *testing.T) {
	bin := servertest.BuildAllot(t)
	first, second := startOwnMariaDB(t, "--server-id=1"), startOwnMariaDB(t, "--server-id=2")
	dbs := map[int]*sql.DB{}
	for _, port := range []int{first, second} {
		db, err := sql.Open("mysql", fmt.Sprintf("root@tcp(127.0.0.1:%d)/", port))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		dbs[port] = db
		for _, q := range []string{
			"CREATE DATABASE allot",
			"CREATE TABLE allot.products (" + columns12 + ") ENGINE=InnoDB",
			"INSERT INTO allot.products VALUES ('S1', 'Eins', 'Acme')",
		} {
			if _, err := db.Exec(q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		var file, pos, doDB, ignoreDB string
		if err := db.QueryRow("SHOW MASTER STATUS").Scan(&file, &pos, &doDB, &ignoreDB); err != nil {
			t.Fatal(err)
		}
		t.Logf("the MariaDB on port %d stands at %s:%s", port, file, pos)
	}

	dir := t.TempDir()
	allot, err := remote.StartProcess(t.Context(), bin, store.Config{DataDir: filepath.Join(dir, "data"), Durability: store.DurabilityWrite})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { allot.Stop(30 * time.Second) })
	r := &rig{t: t, bin: bin, dir: dir, table: "products", state: filepath.Join(dir, "state.json"), allot: allot, stamp: time.Now().UnixNano()}
	if r.c, err = client.New(client.Config{Addr: allot.Addr(), PoolSize: 1}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.c.Close() })
	p := startBinlogProxy(t, fmt.Sprintf("127.0.0.1:%d", first), r.table)
	ip := r.ingestThrough(p.dsn(t))
	r.waitCatalog(ip, map[string]string{"S1": "Eins|Acme|[]"})
	for deadline := time.Now().Add(10 * time.Second); ip.metric("allot_ingest_source_connected") != 1; {
		if time.Now().After(deadline) {
			t.Fatalf("the binlog stream did not start; the ingester's log:\n%s", ip.logText())
		}
		time.Sleep(10 * time.Millisecond)
	}
	before := stateFields(t, r.state)
	source, _ := before["source"].(string)
	if source != "server_id 1, gtid_domain_id 0" {
		t.Fatalf("the checkpoint names the source %q, want the first MariaDB's (server_id 1, gtid_domain_id 0)", source)
	}

	p.redirect(fmt.Sprintf("127.0.0.1:%d", second))
	if _, err := dbs[second].Exec("INSERT INTO allot.products VALUES ('B2', 'Zwei', 'Other')"); err != nil {
		t.Fatal(err)
	}
	var runErr error
	select {
	case runErr = <-ip.done:
		ip.done <- runErr // for the rig's cleanup
	case <-time.After(20 * time.Second):
		t.Fatalf("the ingester went on after the DSN reached another server (B2 is %q in the catalog, the checkpoint %v); its log:\n%s",
			r.record("B2"), stateFields(t, r.state), ip.logText())
	}
	t.Logf("the ingester stopped: %v", runErr)
	if !errors.Is(runErr, ingest.ErrOtherSource) {
		t.Errorf("the ingester stopped with %v, want ingest.ErrOtherSource; its log:\n%s", runErr, ip.logText())
	}
	for _, says := range []string{source, "server_id 2, gtid_domain_id 0", "start from a new snapshot"} {
		if runErr == nil || !strings.Contains(runErr.Error(), says) {
			t.Errorf("the ingester's error does not say %q: %v", says, runErr)
		}
	}
	if got := r.record("B2"); got != "none" {
		t.Errorf("B2 is %q: the ingester followed the other server's binary log", got)
	}
	// (It may have learnt when its file was created meanwhile.)
	if after := stateFields(t, r.state); after["source"] != before["source"] || after["file"] != before["file"] || after["pos"] != before["pos"] {
		t.Errorf("the checkpoint moved from %v to %v", before, after)
	}
}
