package ingest_test

import (
	"testing"
	"time"
)

// TestAudit12CheckpointFollowsARotateOnAnIdleSource: the checkpoint moved
// only at a transaction's commit, never at a rotate: on a source with no
// commits of its own (a quiet night) the checkpoint stayed in a binary log
// file the source rotated away from, and once that file was purged
// (binlog_expire_logs_seconds) the ingester could not resume without a new
// snapshot. At a rotate between transactions the checkpoint moves to the
// start of the new file, and the ingester resumes from there.
func TestAudit12CheckpointFollowsARotateOnAnIdleSource(t *testing.T) {
	r := newRig(t, columns12, "")
	r.exec("INSERT INTO `"+r.table+"` VALUES (?,?,?)", "R1", "Eins", "Acme")
	in := r.ingest12(replDSN(), "--server-id", r.serverID12())
	r.waitSnapshot(in, 30*time.Second)
	r.exec("FLUSH BINARY LOGS")
	head, _ := binlogHead(t.Context(), t, r.db)
	deadline := time.Now().Add(5 * time.Second)
	for readState(t, r.state).File != head {
		if time.Now().After(deadline) {
			t.Fatalf("5 s after the source rotated to %s, the checkpoint is still %+v: a purge of the file it names would force a new snapshot; ingester log:\n%s",
				head, readState(t, r.state), in.logText())
		}
		time.Sleep(20 * time.Millisecond)
	}
	in.kill()
	r.exec("INSERT INTO `"+r.table+"` VALUES (?,?,?)", "R2", "Zwei", "Acme")
	in = r.ingest12(replDSN(), "--server-id", r.serverID12())
	r.waitRecord(in, "R2", "Zwei|Acme|[]")
}
