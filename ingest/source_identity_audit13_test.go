package ingest_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"
)

// A checkpoint is a binlog file and position, which name one event on the
// server that wrote them and another on any other. The checkpoint named no
// server: an ingester whose DSN reached another server (a failover behind
// one address, a server rebuilt or its binary log reset) resumed at the
// same file and position there, without a word.

// stateFields reads the ingester's checkpoint as JSON fields.
func stateFields(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the ingester's state: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("the ingester's state %q: %v", b, err)
	}
	return m
}

// writeStateFields replaces the ingester's checkpoint with m.
func writeStateFields(t *testing.T, path string, m map[string]any) {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// identityRig follows a table with one row through a snapshot and one
// committed change, and stops the ingester with a checkpoint after it.
func identityRig(t *testing.T) *rig {
	r := newRig(t, columns12, "")
	r.exec("INSERT INTO `"+r.table+"` VALUES (?,?,?)", "S1", "Eins", "Acme")
	in := r.ingest12(replDSN(), "--server-id", r.serverID12())
	r.waitSnapshot(in, 30*time.Second)
	snapshot := readState(t, r.state)
	r.exec("UPDATE `"+r.table+"` SET name = ? WHERE id = ?", "Eins neu", "S1")
	r.waitRecord(in, "S1", "Eins neu|Acme|[]")
	deadline := time.Now().Add(5 * time.Second)
	for readState(t, r.state).Pos == snapshot.Pos {
		if time.Now().After(deadline) {
			t.Fatalf("the checkpoint did not move past the snapshot's %+v; ingester log:\n%s", snapshot, in.logText())
		}
		time.Sleep(20 * time.Millisecond)
	}
	in.kill()
	return r
}

// TestAudit13CheckpointNamesItsSource: the checkpoint names the source it
// was taken on and the creation of its binlog file, and a restart on the
// same source resumes.
func TestAudit13CheckpointNamesItsSource(t *testing.T) {
	r := identityRig(t)
	m := stateFields(t, r.state)
	if s, _ := m["source"].(string); !strings.Contains(s, "server_") {
		t.Errorf("the checkpoint names no source: %v", m)
	}
	if c, _ := m["file_created"].(float64); c == 0 {
		t.Errorf("the checkpoint says not when its binlog file was created: %v", m)
	}
	r.exec("INSERT INTO `"+r.table+"` VALUES (?,?,?)", "S2", "Zwei", "Acme")
	in := r.ingest12(replDSN(), "--server-id", r.serverID12())
	r.waitRecord(in, "S2", "Zwei|Acme|[]")
}

// TestAudit13CheckpointOfAnotherSourceIsRefused: the DSN reaches a source
// other than the one the checkpoint was taken on: the ingester stops,
// saying so and what to do, and sends nothing.
func TestAudit13CheckpointOfAnotherSourceIsRefused(t *testing.T) {
	r := identityRig(t)
	m := stateFields(t, r.state)
	m["source"] = "server_id 4000000001, gtid_domain_id 77"
	writeStateFields(t, r.state, m)
	r.exec("INSERT INTO `"+r.table+"` VALUES (?,?,?)", "S2", "Zwei", "Acme")
	in := r.ingest12(replDSN(), "--server-id", r.serverID12())
	waitStopped(t, in, "a checkpoint of another source", "server_id 4000000001, gtid_domain_id 77")
	waitStopped(t, in, "a checkpoint of another source", "start from a new snapshot")
	if got := r.record("S2"); got != "none" {
		t.Errorf("S2 is %q: the ingester followed the binary log of another source from the checkpoint", got)
	}
	if got := stateFields(t, r.state)["source"]; got != m["source"] {
		t.Errorf("the refused checkpoint was changed: source %v", got)
	}
}

// TestAudit13CheckpointOfARebuiltSourceIsRefused: the source has the
// checkpoint's server id but its binlog file was created at another time
// (the server rebuilt with the same configuration, or RESET MASTER): the
// ingester stops, saying so.
func TestAudit13CheckpointOfARebuiltSourceIsRefused(t *testing.T) {
	r := identityRig(t)
	m := stateFields(t, r.state)
	c, _ := m["file_created"].(float64)
	m["file_created"] = c - 3600
	writeStateFields(t, r.state, m)
	r.exec("INSERT INTO `"+r.table+"` VALUES (?,?,?)", "S2", "Zwei", "Acme")
	in := r.ingest12(replDSN(), "--server-id", r.serverID12())
	waitStopped(t, in, "a checkpoint in a binlog file of the same name created at another time", "was created at")
	if got := r.record("S2"); got != "none" {
		t.Errorf("S2 is %q: the ingester followed another binlog file of the same name", got)
	}
}

// TestAudit13OldCheckpointAdoptsTheSource: a checkpoint written before
// checkpoints named their source is resumed, and takes the source's
// identity, saying so.
func TestAudit13OldCheckpointAdoptsTheSource(t *testing.T) {
	r := identityRig(t)
	m := stateFields(t, r.state)
	source := m["source"]
	writeStateFields(t, r.state, map[string]any{"file": m["file"], "pos": m["pos"]})
	r.exec("INSERT INTO `"+r.table+"` VALUES (?,?,?)", "S2", "Zwei", "Acme")
	in := r.ingest12(replDSN(), "--server-id", r.serverID12())
	r.waitRecord(in, "S2", "Zwei|Acme|[]")
	if !strings.Contains(in.logText(), "names no source") {
		t.Errorf("the ingester did not say it adopted the source; its log:\n%s", in.logText())
	}
	if got := stateFields(t, r.state)["source"]; got == nil || got != source {
		t.Errorf("the adopted checkpoint's source is %v, want %v", got, source)
	}
}
