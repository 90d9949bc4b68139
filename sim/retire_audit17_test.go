package sim

import (
	"testing"

	"allot/vfs"
)

// The background fdatasync of a full segment (the journal's retire, write
// and none modes) lands where the simulator places it, not where the
// scheduler ran the journal's goroutine: a crash of the process may come
// before it, whether or not the goroutine called it (the segment's pages
// stay unsynced, and a power cut after the restart loses what the next
// recovery did not sync), or after it; and it has landed once the
// journal's writer starts the segment after next, which the journal does
// only when that sync returned. Before, the sync landed when the
// goroutine called it, so a crash before it came in one seed of hundreds
// (TestCatchesRecoveryThatDoesNotSyncTheHistory).
func TestARetirementsSyncLandsWhereTheSimulatorPlacesIt(t *testing.T) {
	const (
		full   = "/data/journal-00000000000000000001.log"
		next   = "/data/journal-00000000000000000100.log"
		after  = "/data/journal-00000000000000000200.log"
		frames = "frames of a full segment"
	)
	// start is a process that wrote a full segment and rotated to the
	// next, whose retirement called the full one's sync.
	start := func(t *testing.T) (*vfs.Mem, *faultFS) {
		mem := vfs.NewMem()
		mem.MkdirAll("/data")
		f := newFaultFS(mem, 1, 0)
		f.mem, f.machine, f.unsynced = mem, newMachine(), true
		f.setKills(true)
		g, err := f.Create(full)
		if err != nil {
			t.Fatal(err)
		}
		g.WriteAt([]byte(frames), 0)
		if _, err := f.Create(next); err != nil {
			t.Fatal(err)
		}
		mem.SyncDir("/data")
		if err := g.Sync(); err != nil {
			t.Fatalf("the retirement's sync: %v", err)
		}
		g.Close()
		return mem, f
	}
	// durable reads full after a power cut that keeps no unsynced page.
	durable := func(mem *vfs.Mem) string {
		b, _ := vfs.ReadFile(mem.CrashPages(func(string, int64) int { return 0 }), full)
		return string(b)
	}
	for _, ran := range []bool{false, true} {
		mem, f := start(t)
		f.mu.Lock()
		f.dying = true
		f.mu.Unlock()
		f.settleRetiring(func(called bool) bool {
			if !called {
				t.Errorf("the retirement's sync was called, but not seen")
			}
			return ran
		})
		if got := durable(mem.CrashProcess()); (got == frames) != ran {
			t.Errorf("placed %v before the crash of the process: the full segment holds %q on the disk", ran, got)
		}
	}
	mem, f := start(t)
	if got := durable(mem); got == frames {
		t.Errorf("the retirement's sync landed before the simulator placed it")
	}
	if _, err := f.Create(after); err != nil {
		t.Fatal(err)
	}
	if got := durable(mem); got != frames {
		t.Errorf("the writer started the segment after next, but the full segment holds %q on the disk", got)
	}
}
