package benchsvc

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"allot/vfs"
)

// onDisk reads run id's record from dir.
func onDisk(t *testing.T, dir, id string) Record {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "run-"+id+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var rec Record
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatalf("run %s on disk: %v", id, err)
	}
	return rec
}

// TestRecordsWrittenOutsideTheLockAudit13: a record was written, fsync
// included, under the service's lock, so every reader of the API (the
// page polls the history every 3 s, every sample takes the lock) waited
// for the disk. Now, while a record's fsync is held, the history is
// read; and runs that finish while writes wait all end on disk in their
// final state, an older write of a run never landing after a newer one.
func TestRecordsWrittenOutsideTheLockAudit13(t *testing.T) {
	dir := t.TempDir()
	fs := vfs.NewFaulty(vfs.OS{})
	p := &fakeParser{}
	s, err := New(Config{Parse: p.parse, DataDir: dir, FS: fs, EventInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	held, release := fs.HoldSyncs("run-")
	var once sync.Once
	releaseOnce := func() { once.Do(func() { release(nil) }) }
	defer releaseOnce()

	stores := []string{"embedded", "redis", "mysql"}
	ids := make(chan string, len(stores))
	for _, st := range stores {
		go func() {
			rec, err := s.Submit(json.RawMessage(`{}`), []string{"--stores=" + st, "--duration=20ms"})
			if err != nil {
				t.Error(err)
			}
			ids <- rec.ID
		}()
	}
	select {
	case <-held:
	case <-time.After(10 * time.Second):
		t.Fatal("no record write reached its fsync in 10 s")
	}
	listed := make(chan int)
	go func() {
		page, _ := s.List("", listLimitDefault)
		listed <- len(page.Runs)
	}()
	select {
	case <-listed:
	case <-time.After(10 * time.Second):
		releaseOnce()
		t.Fatal("the history could not be read for 10 s while a record's fsync was held: records are written under the service's lock")
	}
	releaseOnce()
	for range stores {
		id := <-ids
		rec := waitState(t, s, id)
		if rec.State != StateDone {
			t.Fatalf("run %s ended %s (%s)", id, rec.State, rec.Error)
		}
		disk := onDisk(t, dir, id)
		if disk.State != StateDone || len(disk.Results) != 1 || disk.Finished == nil {
			t.Errorf("run %s is done, on disk %s with %d results: a write landed out of order or was lost", id, disk.State, len(disk.Results))
		}
	}
	if names, _ := filepath.Glob(filepath.Join(dir, "*.tmp")); len(names) != 0 {
		t.Errorf("temporary files left: %v", names)
	}
}

// TestDataDirHeldByOneServiceAudit13: two services on one data directory
// each rewrote the other's records from their own memory, and the second
// marked the first's running runs failed as it started. The second is
// refused now, saying which directory and why, and leaves the records as
// they were; once the first has closed, the directory is free again.
func TestDataDirHeldByOneServiceAudit13(t *testing.T) {
	dir := t.TempDir()
	p := &fakeParser{}
	first, err := New(Config{Parse: p.parse, DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	running, err := first.Submit(json.RawMessage(`{}`), []string{"--duration=1h"})
	if err != nil {
		t.Fatal(err)
	}
	second, err := New(Config{Parse: p.parse, DataDir: dir})
	if err == nil {
		second.Close()
		t.Fatal("a second service started on a data directory another one holds")
	}
	if msg := err.Error(); !strings.Contains(msg, dir) || !strings.Contains(msg, "another bench service") {
		t.Errorf("the refusal %q does not name the directory and that another service holds it", msg)
	}
	if disk := onDisk(t, dir, running.ID); disk.State != StateRunning {
		t.Errorf("the refused service changed the first one's running run on disk to %s", disk.State)
	}
	first.Close()
	again, err := New(Config{Parse: p.parse, DataDir: dir})
	if err != nil {
		t.Fatalf("after the first service closed: %v", err)
	}
	if rec, _ := again.Get(running.ID); rec.State != StateFailed {
		t.Errorf("the run the first service stopped: %s, want failed", rec.State)
	}
	again.Close()
}
