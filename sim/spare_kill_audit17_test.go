package sim

import (
	"errors"
	"path"
	"strings"
	"testing"

	"allot/inventory"
	"allot/journal"
	"allot/vfs"
)

// Every segment after a process's first is the preallocated spare renamed
// into place, written and synced through the handle opened as
// segment.spare. faultFS decided its kills by the name a handle was opened
// under, so the process never died in an fdatasync of such a segment
// (fsync runs: 159 of 498 segment fdatasyncs, seed 3, 3,000 ops), nor at
// the sync or unmap of one that was full (write and none runs): only a
// process's first segment was reached. The kills now go by where the
// handle's file is (faultFile.path, which follows a rename).

// A synced journal, as the engine runs it in fsync mode, rotates onto its
// spare: the process must be able to die in the fdatasync of a frame in
// that segment.
func TestAKillReachesTheFdatasyncOfARenamedSpare(t *testing.T) {
	mem := vfs.NewMem()
	f := newFaultFS(mem, 1, 0)
	f.mem, f.machine = mem, newMachine()
	f.setKills(true)
	j, st, _, err := journal.Open(journal.Options{FS: f, Dir: "/data", SegmentBytes: 8 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	st.SetTime(1_700_000_000_000)
	j.SetStamp(st.Now())
	// renamedSpare reports whether an open handle opened as the spare is
	// a journal segment now.
	renamedSpare := func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		for g := range f.open {
			if path.Base(g.name) == "segment.spare" && strings.HasPrefix(path.Base(g.path), "journal-") {
				return true
			}
		}
		return false
	}
	g := inventory.GroupKey{SKU: "sku-1", Condition: "new", Source: "supplier"}
	write := func() error {
		op := inventory.Capture(g, 1)
		st.Apply(&op, nil)
		j.Add(&op)
		if err := j.Write(); err != nil {
			return err
		}
		return j.Sync()
	}
	for i := 0; !renamedSpare(); i++ {
		if i > 10_000 {
			t.Fatalf("the journal wrote %d frames and never rotated onto its spare", i)
		}
		if err := write(); err != nil {
			t.Fatal(err)
		}
	}
	f.mu.Lock()
	f.killRate = 1
	f.mu.Unlock()
	err = write()
	if !f.dead() {
		t.Fatalf("a frame written into the spare renamed into place, synced at a kill rate of 1: the process lived on (write and sync: %v)", err)
	}
	if !errors.Is(err, errKilled) {
		t.Errorf("the write and sync that died returned %v, want errKilled", err)
	}
	if f.takeKilled() == nil {
		t.Errorf("the process died, but what it left was not taken")
	}
}

// In an unsynced journal the sync and unmap of a full segment are steps of
// its retirement, the spare renamed into place's too; and a renamed
// spare's deaths are drawn by the segment's name, the same for every
// process of one seed.
func TestAStepKillReachesARenamedSparesRetirement(t *testing.T) {
	const (
		spare   = "/data/segment.spare"
		segment = "/data/journal-00000000000000000100.log"
	)
	for _, step := range []string{"sync segment", "unmap segment"} {
		t.Run(step, func(t *testing.T) {
			mem := vfs.NewMem()
			mem.EnableMapping()
			mem.MkdirAll("/data")
			f := newFaultFS(mem, 1, 0)
			f.mem, f.machine, f.unsynced = mem, newMachine(), true
			f.stepKillRate, f.stepOnly = 1, step
			f.setKills(true)
			h, err := f.Create(spare)
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			if _, err := h.WriteAt(make([]byte, 4096), 0); err != nil {
				t.Fatal(err)
			}
			m, err := h.(vfs.Mapper).Map(4096)
			if err != nil {
				t.Fatal(err)
			}
			if err := h.Sync(); err != nil {
				t.Fatalf("a sync of the spare before its rename, not yet a segment: %v", err)
			}
			if err := f.Rename(spare, segment); err != nil {
				t.Fatal(err)
			}
			if step == "sync segment" {
				err = h.Sync()
			} else {
				err = h.(vfs.Mapper).Unmap(m)
			}
			if !errors.Is(err, errKilled) || !f.dead() {
				t.Fatalf("%s of the spare renamed to %s at a step kill rate of 1: %v, the process lived on", step, segment, err)
			}
			f.mu.Lock()
			at := f.killedAt
			f.mu.Unlock()
			if op, base, _ := strings.Cut(at, " "); at != step[:strings.IndexByte(step, ' ')]+" "+path.Base(segment) || stepKind(op, base) != step {
				t.Errorf("died at %q, want %s of %s", at, step, path.Base(segment))
			}
		})
	}
	// The draw: the n-th sync of the segment dies by the seed, its name and
	// n, whatever name the handle was opened under.
	diesAt := func(viaSpare bool) int {
		mem := vfs.NewMem()
		mem.MkdirAll("/data")
		f := newFaultFS(mem, 7, 0)
		f.mem, f.machine = mem, newMachine()
		f.killRate = 0.25
		f.setKills(true)
		var h vfs.File
		var err error
		if viaSpare {
			if h, err = f.Create(spare); err == nil {
				err = f.Rename(spare, segment)
			}
		} else {
			h, err = f.Create(segment)
		}
		if err != nil {
			t.Fatal(err)
		}
		for i := 1; i <= 200; i++ {
			if err := h.Sync(); err != nil {
				if !errors.Is(err, errKilled) {
					t.Fatalf("sync %d of %s: %v", i, segment, err)
				}
				return i
			}
		}
		return 0
	}
	spareAt, createdAt := diesAt(true), diesAt(false)
	if createdAt == 0 || spareAt != createdAt {
		t.Fatalf("the process died in sync %d of the spare renamed to %s, in sync %d of %s created (0: never in 200)", spareAt, segment, createdAt, segment)
	}
}
