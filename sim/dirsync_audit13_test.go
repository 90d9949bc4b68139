package sim

import (
	"errors"
	"math/rand/v2"
	"path"
	"strings"
	"sync"
	"testing"
	"time"

	"allot/engine"
	"allot/inventory"
	"allot/vfs"
)

// A data directory the engine makes at its first open is a new name in
// its parent, durable only once the parent is synced: a power cut before
// that loses the directory and every synced segment in it. The simulator
// now models it (a directory made by MkdirAll was durable at once), in
// fsync runs with a power cut, faults off; one level below / and several.
func TestANewDataDirectorysNameIsDurable(t *testing.T) {
	for _, d := range []string{"/data", "/srv/allot/data"} {
		for seed := uint64(1); seed <= 8; seed++ {
			res := Run(Config{Seed: seed, Ops: 1000, Durability: engine.DurabilityFsync, FaultRate: -1, Dir: d})
			if res.Failed() {
				t.Fatalf("seed %d, data directory %s: %v\nreplay: %s", seed, d, res.Violations, res.ReplayCommand())
			}
		}
	}
}

// A journal that never syncs the data directory's parent
// (journal.BrokenDataDirNameNotSynced) loses everything at a power cut.
func TestCatchesADataDirectoryNameNeverSynced(t *testing.T) {
	caughtWhereSoundPasses(t, Config{Ops: 1000, Durability: engine.DurabilityFsync, FaultRate: -1, Dir: "/srv/allot/data", Broken: BrokenDataDirNameNotSynced})
}

// A failed directory sync leaves the directory's entries unknown: drawn
// at the failure, the changes since its last good sync all reached the
// disk or none did, and a later sync that succeeds makes none of those
// durable (only a new change of the entry, synced, does). The file system
// must be remounted: at a power cut the entries are as the failure left
// them.
func TestAFailedDirectorySyncIsNotRetried(t *testing.T) {
	reached, lost := 0, 0
	for seed := uint64(1); seed <= 16; seed++ {
		mem := vfs.NewMem()
		m := newMachine()
		f := newFaultFS(mem, seed, 0)
		f.mem, f.machine = mem, m
		if err := f.MkdirAll("/d"); err != nil {
			t.Fatal(err)
		}
		if err := f.SyncDir("/"); err != nil {
			t.Fatal(err)
		}
		g, err := f.Create("/d/a")
		if err != nil {
			t.Fatal(err)
		}
		g.Write([]byte("acknowledged"))
		g.Sync()
		g.Close()
		f.setRate(1)
		if err := f.SyncDir("/d"); err == nil {
			t.Fatal("the injected directory sync failure did not fail")
		}
		f.setRate(0)
		if !m.mustRemount() {
			t.Fatalf("seed %d: a failed directory sync does not call for a remount", seed)
		}
		// The retry succeeds, and tells nothing.
		if err := f.SyncDir("/d"); err != nil {
			t.Fatal(err)
		}
		after := m.powerCut(mem.CrashPages(func(string, int64) int { return 0 }), false)
		if _, err := vfs.ReadFile(after, "/d/a"); err == nil {
			reached++
		} else if errors.Is(err, vfs.ErrNotExist) {
			lost++
		} else {
			t.Fatal(err)
		}
		if m.mustRemount() {
			t.Fatalf("seed %d: the power cut did not end the remount", seed)
		}
	}
	t.Logf("%d failed syncs reached the disk, %d did not", reached, lost)
	if reached == 0 || lost == 0 {
		t.Fatalf("of 16 failed directory syncs %d reached the disk and %d did not: want both", reached, lost)
	}
}

// A journal that syncs a new segment's directory again after that failed,
// and goes on when the retry succeeds (journal.BrokenRetryDirSync),
// acknowledges frames in a segment whose name may never reach the disk:
// the remount after the failure loses them. When a failed directory sync
// changed nothing and the next one synced everything, this journal passed.
func TestCatchesARetriedDirectorySync(t *testing.T) {
	caughtWhereSoundPasses(t, Config{Ops: 2000, Durability: engine.DurabilityFsync, FaultRate: 0.03, Broken: BrokenRetryDirSync})
}

// raceFS holds a snapshot's directory sync (the first after the rename of
// its temporary file) until a new segment's name is pending (the spare
// renamed into place, the segment's own directory sync not yet run), then
// fails it: the rename is left unknown, and (the seed is chosen so) off
// the disk.
type raceFS struct {
	*faultFS
	mu              sync.Mutex
	snapRenamed     bool
	waiting         bool
	renamed, failed chan struct{}
}

func (r *raceFS) Rename(from, to string) error {
	err := r.faultFS.Rename(from, to)
	r.mu.Lock()
	if strings.HasSuffix(from, ".snap.tmp") {
		r.snapRenamed = true
	}
	hold := err == nil && path.Base(from) == "segment.spare" && r.waiting
	r.mu.Unlock()
	if hold {
		close(r.renamed)
		select {
		case <-r.failed:
		case <-time.After(10 * time.Second):
		}
	}
	return err
}

func (r *raceFS) SyncDir(dir string) error {
	r.mu.Lock()
	mine := r.snapRenamed && !r.waiting
	if mine {
		r.waiting = true
	}
	r.mu.Unlock()
	if !mine {
		return r.faultFS.SyncDir(dir)
	}
	select {
	case <-r.renamed:
	case <-time.After(10 * time.Second):
		return r.faultFS.SyncDir(dir)
	}
	r.faultFS.setRate(1)
	err := r.faultFS.SyncDir(dir)
	r.faultFS.setRate(0)
	close(r.failed)
	return err
}

// A snapshot's directory sync that fails while a new segment's name is
// pending leaves that name unknown, and no later sync makes it durable.
// The engine logged the snapshot's failure and went on: the segment's own
// directory sync then succeeded, and ops were acknowledged in a segment a
// power cut (the remount the failure calls for) takes away.
func TestAFailedSnapshotDirectorySyncStopsTheEngine(t *testing.T) {
	seed := uint64(1)
	for rand.New(rand.NewPCG(seed, 1)).IntN(2) == 0 {
		seed++ // the draw that leaves the failed sync's changes off the disk
	}
	mem := vfs.NewMem()
	m := newMachine()
	base := newFaultFS(mem, seed, 0)
	base.mem, base.machine = mem, m
	fs := &raceFS{faultFS: base, renamed: make(chan struct{}), failed: make(chan struct{})}
	cfg := engine.Config{Dir: dir, FS: fs, Durability: engine.DurabilityFsync, TickInterval: -1, SegmentBytes: 8 << 10, SnapshotEveryOps: 20}
	e, err := engine.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	row := inventory.RowKey{SKU: "a", Warehouse: "w1", Condition: "new", Source: "s"}
	const stock = 1_000_000
	if _, err := e.Stock(row, stock, 1); err != nil {
		t.Fatal(err)
	}
	acked, after := 0, 0
	for i := 0; i < 2000 && after < 50; i++ {
		res, err := e.Capture(row.Group(), 1, nil)
		if err != nil {
			break // stopped: refused, or its outcome unknown
		}
		if res.Code != inventory.CodeOK {
			t.Fatalf("capture: %+v", res)
		}
		acked++
		select {
		case <-fs.failed:
			after++
		default:
		}
	}
	select {
	case <-fs.failed:
	default:
		t.Fatalf("the snapshot's directory sync never met a pending segment name (%d captures)", acked)
	}
	if !m.mustRemount() {
		t.Fatal("the failed directory sync did not call for a remount")
	}
	disk := m.powerCut(mem.CrashPages(func(string, int64) int { return 0 }), false)
	cfg.FS = disk
	e2, err := engine.Open(cfg)
	if err != nil {
		t.Fatalf("after the remount, with %d captures acknowledged (%d after the failed sync): %v", acked, after, err)
	}
	defer e2.Close()
	t.Logf("recovered %+v, files %v", e2.Recovery(), disk.Names())
	res, err := e2.Get(row)
	if err != nil {
		t.Fatal(err)
	}
	if res.Count > stock-int64(acked) {
		t.Fatalf("after the remount the row holds %d: %d of %d acknowledged captures are lost (%d were acknowledged after the snapshot's directory sync failed)",
			res.Count, res.Count-(stock-int64(acked)), acked, after)
	}
}
