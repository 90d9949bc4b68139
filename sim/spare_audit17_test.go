package sim

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"allot/inventory"
	"allot/journal"
	"allot/vfs"
)

// In write and none runs every segment after a process's first is the
// preallocated spare renamed into place, and the journal writes it, and
// syncs it once full (its retire), through the handle it opened as
// segment.spare. faultFS matched the retiring segment's sync by the name a
// handle was opened under, so that sync never matched the retiring
// segment's journal-... name and landed at once: the simulator placed the
// background sync of the first full segment of each process only. A
// handle's path now follows its file through a rename, as on a real file
// system, and the sync of every full segment waits for the simulator.
//
// The real journal, unsynced and mapped as the engine runs it in none
// mode, rotates twice: the second full segment is the first spare,
// renamed. Its background sync must be held back (not on the disk), and
// then land where the simulator places it: before a crash of the process,
// or not at all (the crash came first, its frames in the page cache).
func TestARenamedSparesRetirementWaitsForTheSimulator(t *testing.T) {
	for _, ran := range []bool{false, true} {
		t.Run(fmt.Sprintf("ran=%v", ran), func(t *testing.T) {
			mem := vfs.NewMem()
			mem.EnableMapping()
			f := newFaultFS(mem, 1, 0)
			f.mem, f.machine, f.unsynced = mem, newMachine(), true
			f.setKills(true)
			j, st, _, err := journal.Open(journal.Options{FS: f, Dir: "/data", SegmentBytes: 8 << 10, Mmap: true, Unsynced: true})
			if err != nil {
				t.Fatal(err)
			}
			st.SetTime(1_700_000_000_000)
			j.SetStamp(st.Now())
			// started lists the segments the writer made, in order.
			var started []string
			note := func() {
				f.mu.Lock()
				cur := f.current
				f.mu.Unlock()
				if cur != "" && (len(started) == 0 || started[len(started)-1] != cur) {
					started = append(started, cur)
				}
			}
			g := inventory.GroupKey{SKU: "sku-1", Condition: "new", Source: "supplier"}
			for i := 0; len(started) < 3; i++ {
				if i > 10_000 {
					t.Fatalf("no third segment after %d frames (segments %v)", i, started)
				}
				op := inventory.Capture(g, 1)
				st.Apply(&op, nil)
				j.Add(&op)
				if err := j.Write(); err != nil {
					t.Fatal(err)
				}
				note()
			}
			full := started[1]
			f.mu.Lock()
			retiringName := f.retiringName
			f.mu.Unlock()
			if retiringName != full {
				t.Fatalf("the retiring segment is %q, want %q (segments %v)", retiringName, full, started)
			}
			live, err := vfs.ReadFile(mem, full)
			if err != nil {
				t.Fatal(err)
			}
			// durable reads full after a power cut that keeps no unsynced
			// page.
			durable := func(m *vfs.Mem) []byte {
				b, _ := vfs.ReadFile(m.CrashPages(func(string, int64) int { return 0 }), full)
				return b
			}
			// The journal's goroutine syncs full now or soon: wait until
			// faultFS saw that sync (held back) or it reached the disk
			// (landed at once). Each is an event, not a time: the bound
			// only ends a test that would otherwise hang.
			held := false
			for i := 0; i < 60_000; i++ {
				f.mu.Lock()
				held = f.retireCalled && f.retiringName == full
				f.mu.Unlock()
				if held || bytes.Equal(durable(mem), live) {
					break
				}
				if i == 59_999 {
					t.Fatalf("the background sync of %s neither held back nor on the disk", full)
				}
				time.Sleep(time.Millisecond)
			}
			if !held {
				t.Fatalf("the background sync of %s, the spare renamed into place, landed at once: the simulator did not place it", full)
			}
			if bytes.Equal(durable(mem), live) {
				t.Fatalf("the background sync of %s was held back, but its frames are on the disk", full)
			}
			f.mu.Lock()
			f.dying = true
			f.mu.Unlock()
			f.settleRetiring(func(called bool) bool { return ran })
			crashed := mem.CrashProcess()
			if got := durable(crashed); bytes.Equal(got, live) != ran {
				t.Errorf("the sync of %s placed before the crash of the process: %v; its frames on the disk: %v", full, ran, !ran)
			}
			j.Close()
		})
	}
}
