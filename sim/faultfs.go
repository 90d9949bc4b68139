package sim

import (
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"path"
	"strings"
	"sync"
	"syscall"

	"allot/vfs"
)

// faultFS injects EIO and ENOSPC into every kind of file-system call
// (create, open, read, write, sync, directory sync, rename, remove,
// truncate, map, unmap), each call failing with probability rate. A failed
// sync leaves the bytes it did not write readable but clean, never to be
// written by a later sync (vfs.SyncFailer), as Linux does; a failed
// directory sync leaves the directory's entries unknown until the file
// system is remounted (machine): it used to change nothing, so that a
// sync tried again made every entry durable, which hid a journal that
// retries one and goes on. The n-th call of one kind on one file is
// decided by the seed, the kind, the name the file was opened under (a
// renamed spare's faults stay keyed by segment.spare) and n, not by the
// order of all calls: the engine's background goroutines (spare
// preallocation, the sync of full segments, snapshots) then do not shift
// the faults of the calls made in the seed's order. The kills below are
// drawn so too, by the name the file has at the call instead.
// Reads fail only while reads is set (recovery), so that a run does not
// end in a loop of failed opens. Besides its faults, it kills the process:
// in an fdatasync of a segment (kill) and at a step of writing a snapshot
// or retiring a segment (stepKill), each by where the handle's file is now
// (faultFile.path), not the name it was opened under: a spare renamed into
// place is the segment it became, and dies as every other does. In an
// unsynced journal it also holds the background fdatasync of the last full
// segment, whichever name its handle was opened under, for the simulator
// to place (retiring).
type faultFS struct {
	fs vfs.FS

	mu     sync.Mutex
	seed   uint64
	calls  map[string]uint64 // calls so far, by kind and file
	rate   float64
	reads  bool
	faults int
	// lieSync makes Sync report success without syncing (a broken disk
	// or a broken engine that acknowledges before the data is durable).
	lieSync bool
	// killRate is the chance that the process dies in an fdatasync of a
	// journal segment, after its frames were written and before they are
	// synced, while kills is set (between recoveries). mem is the
	// machine's file system: killed is what the next process finds there
	// (vfs.Mem.CrashProcess, taken as the sync begins). That call and
	// every later one fail, and a copy into a mapped segment writes
	// nothing (faultFile.WriteMapped), so the dead process acknowledges
	// nothing more (but a frame copied into a mapped segment, which
	// fails no call: the simulator counts no ack it saw after the
	// death), and nothing it does lands in what the next process finds.
	killRate float64
	kills    bool
	mem      *vfs.Mem
	killed   *vfs.Mem
	// dying is set the moment the process dies (here, or at the
	// simulator's crash), before killed is taken (captured is closed
	// then), and stays set: an ack seen while it is unset came before the
	// death, and is in what the next process finds.
	dying    bool
	captured chan struct{}
	// stepKillRate is the chance that the process dies at one step of
	// writing a snapshot, of retiring a segment, or of any rename, remove
	// or directory sync (stepKill), while kills is set; killedAt names the
	// step it died at.
	stepKillRate float64
	killedAt     string
	// stepOnly, when set, limits the steps the process may die at to one
	// kind (stepKind), for a test that aims at each in turn.
	stepOnly string
	// unsynced: the engine's segments are synced only when full (write
	// and none modes), so a sync or unmap of one is a step of retiring it.
	unsynced bool
	// machine is what outlives this process on its machine (see
	// machine); retired says a crash ended this process, whose goroutines
	// may still call in but no longer act on the machine.
	machine *machine
	retired bool
	// current is the segment the journal writes (unsynced runs), the one
	// the writer made last (created, or the spare renamed into place).
	// retiring is a handle on the full segment it left at its last
	// rotation while the process ran (retiringName), whose fdatasync the
	// journal runs on a goroutine of its own (journal's retire), through
	// the handle it wrote the segment with: opened under that name (the
	// first segment a process makes, or one made when the spare failed),
	// or under segment.spare (every other: the spare renamed into place),
	// matched by the handle's path, which follows its file (open). That
	// sync returns at once (retireCalled) and lands on the disk when the
	// simulator places it (settleRetiring): at the writer's next rotation,
	// which the journal makes only once that sync returned; at a sync of
	// the current segment, which waits for it too; at the process's death
	// at a step (dieLocked), or at the simulator's crash, which draws
	// whether a crash of the process came before it
	// (runner.placeRetirement). Without it the goroutine's sync ran when
	// the scheduler let it, nearly always at once, so a crash of the
	// process before it (the history a recovery must then sync,
	// journal.BrokenNoHistorySync) came in one seed of hundreds, which
	// seed varying from run to run, and under go test -race in none of
	// 5,000.
	current      string
	retiring     vfs.File
	retiringName string
	retireCalled bool
	// open are the handles this file system gave out and that are not
	// closed, for Rename and Remove to keep each one's path (faultFile).
	open map[*faultFile]struct{}
}

// machine is the state of one simulated machine that outlives a process
// and ends at a power cut (or a remount, which is one for the file system):
// what a failed directory sync left unknown, and whether the data
// directory's own name is durable.
//
// A directory made by MkdirAll is a new entry in its parent, durable only
// once the parent is synced; a power cut before that loses the directory
// and everything in it. A failed directory sync (EIO, ENOSPC) leaves the
// directory's state unknown, as Linux leaves it: the entry changes made
// since its last good sync may each have reached the disk or not, decided
// at the failure (both are drawn: all of them, or none), and no later sync
// decides again, whether it reports success or not: only changing the
// entry again (a create of a missing name, a rename, a remove) and syncing
// that makes it durable. The file system must be remounted (ext4 and xfs
// stop at such a failure): the next crash is a power cut, and a recovery
// that failed on it is retried only after one.
type machine struct {
	mu sync.Mutex
	// newDirs are directories MkdirAll made whose names are not durable
	// yet; true: a failed sync of the parent left it unknown and it stays
	// so.
	newDirs map[string]bool
	// stuck are the entries a failed directory sync left unknown and not
	// on the disk, by path: what the disk holds for each.
	stuck map[string]*stuckEntry
	// remount: a directory sync failed since the last power cut.
	remount bool
	// dirSyncFailures counts the directory syncs that failed, for the
	// draw of what each left on the disk.
	dirSyncFailures uint64
}

// stuckEntry is what the disk holds for a name a failed directory sync
// left unknown and unwritten: the file as it was durable then (absent:
// the name was not on the disk).
type stuckEntry struct {
	absent  bool
	content []byte
	// changed: the entry was changed again since, so the next good sync of
	// its directory makes its new state durable.
	changed bool
}

func newMachine() *machine {
	return &machine{newDirs: map[string]bool{}, stuck: map[string]*stuckEntry{}}
}

// errKilled is what a killed process's calls return.
var errKilled = errors.New("sim: the process was killed")

// kill decides whether the process dies in this sync of the file at
// name, where the handle's file is now (faultFile.where): a journal
// segment, whether the process created it under that name or renamed the
// spare into place (its handle was opened as segment.spare); not the spare
// before its rename, nor a removed file. The n-th sync of one segment is
// decided by the seed, the segment's name and n, so a renamed spare's
// deaths are as fixed by the seed as any other's. If it dies, it takes
// what the next process finds.
func (f *faultFS) kill(name string) bool {
	f.mu.Lock()
	if f.dying {
		f.mu.Unlock()
		return true
	}
	if !f.kills || f.killRate == 0 || !strings.HasPrefix(path.Base(name), "journal-") {
		f.mu.Unlock()
		return false
	}
	if !f.drawLocked("kill "+name, f.killRate) {
		f.mu.Unlock()
		return false
	}
	f.dieLocked("")
	return true
}

// drawLocked counts a call of key and draws whether it dies, at rate:
// the draw depends on the seed, the key and the call's number only, so a
// replay dies at the same calls whatever else ran. Called with f.mu held.
func (f *faultFS) drawLocked(key string, rate float64) bool {
	f.calls[key]++
	h := fnv.New64a()
	h.Write([]byte(key))
	return rand.New(rand.NewPCG(f.seed^h.Sum64(), f.calls[key])).Float64() < rate
}

// dieLocked ends the process at this call, step naming it ("" for a death
// in an fdatasync of a segment): dead at once, then what the next process
// finds is taken. Called with f.mu held; returns with it released.
//
// A full segment's background sync that was called (retiring) lands
// before: the process may have gone on past it, as the kill of a later
// step of the same retirement has.
func (f *faultFS) dieLocked(step string) {
	f.dying, f.killedAt = true, step
	f.captured = make(chan struct{})
	f.mu.Unlock()
	f.settleRetiring(ranIfCalled)
	killed := f.mem.CrashProcess()
	f.mu.Lock()
	f.killed = killed
	close(f.captured)
	f.mu.Unlock()
}

// dead reports whether the process was killed.
func (f *faultFS) dead() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.dying
}

// takeKilled returns what a killed process left, or nil. The process
// stays dead: its goroutines' later calls fail and land nowhere.
func (f *faultFS) takeKilled() *vfs.Mem {
	f.mu.Lock()
	captured := f.captured
	f.mu.Unlock()
	if captured != nil {
		<-captured
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	k := f.killed
	f.killed, f.captured = nil, nil
	return k
}

// stepKill decides whether the process dies at this call, a step of
// writing a snapshot (any call on a snapshot file), of retiring segments
// (removing one, or, in an unsynced journal, syncing or unmapping a full
// one, a spare renamed into place included), or any rename, remove or
// directory sync. name is the call's argument, or for a call on a handle
// where its file is now (faultFile.where), not the name it was opened
// under. If it does, it takes what the next process finds, as kill does,
// and every later call fails.
func (f *faultFS) stepKill(op, name string) bool {
	f.mu.Lock()
	if f.dying {
		f.mu.Unlock()
		return true
	}
	base := path.Base(name)
	step := strings.HasPrefix(base, "snapshot-") || op == "remove" || op == "rename" || op == "syncdir" ||
		(f.unsynced && (op == "sync" || op == "unmap") && strings.HasPrefix(base, "journal-"))
	if !f.kills || f.stepKillRate == 0 || !step || (f.stepOnly != "" && stepKind(op, base) != f.stepOnly) {
		f.mu.Unlock()
		return false
	}
	if !f.drawLocked("step "+op+" "+name, f.stepKillRate) {
		f.mu.Unlock()
		return false
	}
	f.dieLocked(op + " " + base)
	return true
}

// stepKind names the kind of a step, op and the file's base name: "sync
// snapshot.tmp", "rename snapshot.tmp", "remove snapshot", "remove
// segment", "unmap segment", "syncdir data", "rename segment.spare".
func stepKind(op, base string) string {
	switch {
	case strings.HasPrefix(base, "snapshot-") && strings.HasSuffix(base, ".tmp"):
		base = "snapshot.tmp"
	case strings.HasPrefix(base, "snapshot-"):
		base = "snapshot"
	case strings.HasPrefix(base, "journal-"):
		base = "segment"
	}
	return op + " " + base
}

func (f *faultFS) setKills(on bool) {
	f.mu.Lock()
	f.kills = on
	f.mu.Unlock()
}

func newFaultFS(fs vfs.FS, seed uint64, rate float64) *faultFS {
	return &faultFS{fs: fs, seed: seed, calls: map[string]uint64{}, rate: rate, open: map[*faultFile]struct{}{}}
}

// fail decides one call: nil, or EIO or ENOSPC wrapped with what failed.
func (f *faultFS) fail(op, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.dying {
		// A dead process's calls land nowhere the next one looks.
		return errKilled
	}
	if f.rate == 0 {
		return nil
	}
	key := op + " " + name
	f.calls[key]++
	h := fnv.New64a()
	h.Write([]byte(key))
	rng := rand.New(rand.NewPCG(f.seed^h.Sum64(), f.calls[key]))
	if rng.Float64() >= f.rate {
		return nil
	}
	f.faults++
	errno := syscall.EIO
	if rng.IntN(2) == 0 {
		errno = syscall.ENOSPC
	}
	return fmt.Errorf("sim: injected %s on %s: %w", op, name, errno)
}

func (f *faultFS) setRate(rate float64) {
	f.mu.Lock()
	f.rate = rate
	f.mu.Unlock()
}

func (f *faultFS) wrap(name string, file vfs.File, err error) (vfs.File, error) {
	if err != nil {
		return nil, err
	}
	g := &faultFile{File: file, fs: f, name: name, path: path.Clean(name)}
	f.mu.Lock()
	f.open[g] = struct{}{}
	f.mu.Unlock()
	return g, nil
}

// moved notes a good rename of from to to, or (to "") a good remove of
// from: the open handles on the file at from are on it at to now, as a
// real file system's handles follow their file, and those on a file to
// replaced are on no name (nor are those on a removed file). Only the
// handles' paths change, which key the kills (kill, stepKill): their
// names, which key the injected faults, do not.
func (f *faultFS) moved(from, to string) {
	from = path.Clean(from)
	if to != "" {
		to = path.Clean(to)
	}
	if from == to {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for g := range f.open {
		switch g.path {
		case from:
			g.path = to
		case to:
			g.path = ""
		}
	}
}

func (f *faultFS) Create(name string) (vfs.File, error) {
	if f.stepKill("create", name) {
		return nil, errKilled
	}
	if err := f.fail("create", name); err != nil {
		return nil, err
	}
	// A create of a name that exists truncates that file: no entry change.
	if f.isStuck(name) {
		if g, err := f.fs.Open(name); err == nil {
			g.Close()
		} else {
			defer f.entryChanged(name)
		}
	}
	file, err := f.fs.Create(name)
	if err == nil {
		f.segmentStarted(name)
	}
	return f.wrap(name, file, err)
}

func (f *faultFS) OpenAppend(name string) (vfs.File, error) {
	if err := f.fail("open", name); err != nil {
		return nil, err
	}
	file, err := f.fs.OpenAppend(name)
	return f.wrap(name, file, err)
}

func (f *faultFS) OpenWrite(name string) (vfs.File, error) {
	if err := f.fail("open", name); err != nil {
		return nil, err
	}
	file, err := f.fs.OpenWrite(name)
	return f.wrap(name, file, err)
}

func (f *faultFS) Open(name string) (vfs.File, error) {
	if f.readFaults() {
		if err := f.fail("open", name); err != nil {
			return nil, err
		}
	}
	file, err := f.fs.Open(name)
	return f.wrap(name, file, err)
}

func (f *faultFS) readFaults() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reads
}

func (f *faultFS) Remove(name string) error {
	if f.stepKill("remove", name) {
		return errKilled
	}
	if err := f.fail("remove", name); err != nil {
		return err
	}
	f.entryChanged(name)
	if err := f.fs.Remove(name); err != nil {
		return err
	}
	f.moved(name, "")
	return nil
}

func (f *faultFS) Rename(from, to string) error {
	if f.stepKill("rename", from) {
		return errKilled
	}
	if err := f.fail("rename", from); err != nil {
		return err
	}
	f.entryChanged(from)
	f.entryChanged(to)
	if err := f.fs.Rename(from, to); err != nil {
		return err
	}
	f.moved(from, to)
	f.segmentStarted(to)
	return nil
}

func (f *faultFS) List(dir string) ([]string, error)   { return f.fs.List(dir) }
func (f *faultFS) Lock(name string) (io.Closer, error) { return f.fs.Lock(name) }

// MkdirAll makes dir and its missing parents; each one it makes is a new
// entry in its parent, durable only once the parent is synced (machine).
func (f *faultFS) MkdirAll(dir string) error {
	var made []string
	for d := path.Clean(dir); d != "/" && d != "."; d = path.Dir(d) {
		if _, err := f.fs.List(d); err == nil {
			break
		}
		made = append(made, d)
	}
	if err := f.fs.MkdirAll(dir); err != nil {
		return err
	}
	if m := f.liveMachine(); m != nil {
		m.mu.Lock()
		for _, d := range made {
			m.newDirs[d] = false
		}
		m.mu.Unlock()
	}
	return nil
}

// SyncDir syncs dir, or fails and leaves its entries unknown (machine).
func (f *faultFS) SyncDir(dir string) error {
	if f.stepKill("syncdir", dir) {
		return errKilled
	}
	if err := f.fail("syncdir", dir); err != nil {
		if !errors.Is(err, errKilled) {
			f.dirSyncFailed(path.Clean(dir))
		}
		return err
	}
	if err := f.fs.SyncDir(dir); err != nil {
		return err
	}
	f.dirSynced(path.Clean(dir))
	return nil
}

// liveMachine returns the machine this process runs on, or nil for a
// process a crash ended (its goroutines may still call in).
func (f *faultFS) liveMachine() *machine {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.retired || f.dying {
		return nil
	}
	return f.machine
}

func (f *faultFS) isStuck(name string) bool {
	m := f.liveMachine()
	if m == nil {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.stuck[path.Clean(name)] != nil
}

// entryChanged notes a change of name's directory entry: a name a failed
// directory sync left unknown is made durable by the next good sync.
func (f *faultFS) entryChanged(name string) {
	m := f.liveMachine()
	if m == nil {
		return
	}
	m.mu.Lock()
	if e := m.stuck[path.Clean(name)]; e != nil {
		e.changed = true
	}
	m.mu.Unlock()
}

// dirSynced notes a good sync of dir: the new directories in it and the
// entries changed since a failed sync are durable now.
func (f *faultFS) dirSynced(dir string) {
	m := f.liveMachine()
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for d, unknown := range m.newDirs {
		if path.Dir(d) == dir && !unknown {
			delete(m.newDirs, d)
		}
	}
	for name, e := range m.stuck {
		if path.Dir(name) == dir && e.changed {
			delete(m.stuck, name)
		}
	}
}

// dirSyncFailed leaves dir's entry changes since its last good sync
// unknown: drawn from the seed, they all reached the disk, or none did and
// none will by a later sync (machine). Either way the file system must be
// remounted.
func (f *faultFS) dirSyncFailed(dir string) {
	m := f.liveMachine()
	if m == nil {
		return
	}
	m.mu.Lock()
	m.remount = true
	m.dirSyncFailures++
	reached := rand.New(rand.NewPCG(f.seed, m.dirSyncFailures)).IntN(2) == 0
	m.mu.Unlock()
	if reached {
		if f.fs.SyncDir(dir) == nil {
			f.dirSynced(dir)
		}
		return
	}
	// What the disk holds now: the durable namespace, as a power cut
	// would find it.
	disk := f.mem.Crash(nil)
	onDisk := map[string]bool{}
	for _, n := range disk.Names() {
		if path.Dir(n) == dir {
			onDisk[n] = true
		}
	}
	now := map[string]bool{}
	for _, n := range f.mem.Names() {
		if path.Dir(n) == dir {
			now[n] = true
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for d := range m.newDirs {
		if path.Dir(d) == dir {
			m.newDirs[d] = true
		}
	}
	for n := range now {
		if !onDisk[n] && m.stuck[n] == nil {
			m.stuck[n] = &stuckEntry{absent: true}
		}
	}
	for n := range onDisk {
		if !now[n] && m.stuck[n] == nil {
			content, _ := vfs.ReadFile(disk, n)
			m.stuck[n] = &stuckEntry{content: content}
		}
	}
	for n, e := range m.stuck {
		if path.Dir(n) == dir {
			// A change since the last failure is unknown again.
			e.changed = false
		}
	}
}

// powerCut applies to survived, the disk after a power cut, what the
// machine left unknown: the entries a failed directory sync left off the
// disk are as the disk held them, and a directory whose name was never
// made durable is gone with everything in it. It returns the disk and
// resets the machine, which the power cut (or remount) restarts.
func (m *machine) powerCut(survived *vfs.Mem, mapping bool) *vfs.Mem {
	m.mu.Lock()
	defer m.mu.Unlock()
	for name, e := range m.stuck {
		if e.absent {
			survived.Remove(name)
		} else if g, err := survived.Create(name); err == nil {
			g.WriteAt(e.content, 0)
			g.Sync()
			g.Close()
		}
		survived.SyncDir(path.Dir(name))
	}
	if len(m.newDirs) > 0 {
		gone := func(name string) bool {
			for d := range m.newDirs {
				if strings.HasPrefix(name, d+"/") {
					return true
				}
			}
			return false
		}
		fresh := vfs.NewMem()
		if mapping {
			fresh.EnableMapping()
		}
		for _, name := range survived.Names() {
			if gone(name) {
				continue
			}
			content, _ := vfs.ReadFile(survived, name)
			fresh.MkdirAll(path.Dir(name))
			if g, err := fresh.Create(name); err == nil {
				g.WriteAt(content, 0)
				g.Sync()
				g.Close()
			}
			fresh.SyncDir(path.Dir(name))
		}
		survived = fresh
	}
	m.newDirs, m.stuck, m.remount = map[string]bool{}, map[string]*stuckEntry{}, false
	return survived
}

func (m *machine) mustRemount() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.remount
}

// segmentStarted notes that the journal's writer made segment name (a
// create, or the spare renamed into place) while this process runs: in an
// unsynced journal the writer rotates only once the background sync of
// the full segment it left last time returned (journal's waitRetired), so
// that sync lands now, and the segment it leaves now is the one retiring.
// At the open no segment is retiring: recovery synced what it keeps.
func (f *faultFS) segmentStarted(name string) {
	name = path.Clean(name)
	if !strings.HasPrefix(path.Base(name), "journal-") {
		return
	}
	f.mu.Lock()
	if !f.unsynced || f.dying || f.retired || name == f.current {
		f.mu.Unlock()
		return
	}
	left := f.current
	f.current = name
	kills := f.kills
	f.mu.Unlock()
	f.settleRetiring(ranIfCalled)
	if !kills || left == "" {
		return
	}
	g, err := f.fs.Open(left)
	if err != nil {
		return // removed already: nothing of it is read again
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.dying || f.retired {
		g.Close()
		return
	}
	f.retiring, f.retiringName, f.retireCalled = g, left, false
}

// deferRetiring takes a sync through handle g (one that did not fail)
// that is the retiring segment's background sync, g's file being the
// retiring segment (its path, not the name it was opened under: a renamed
// spare's is segment.spare): it returns at once, and lands when the
// simulator places it (settleRetiring). A sync of the current segment
// comes after the retiring one returned (journal's Sync waits for it),
// which lands first.
func (f *faultFS) deferRetiring(g *faultFile) bool {
	f.mu.Lock()
	if f.retiring == nil || f.dying {
		f.mu.Unlock()
		return false
	}
	name := g.path
	if name == f.retiringName {
		f.retireCalled = true
		f.mu.Unlock()
		return true
	}
	current := name == f.current
	f.mu.Unlock()
	if current {
		f.settleRetiring(ranIfCalled)
	}
	return false
}

// ranIfCalled places the retiring segment's sync where the journal's
// goroutine put it: on the disk if it was called.
func ranIfCalled(called bool) bool { return called }

// settleRetiring ends the retiring segment's wait: ran, told whether its
// background sync was called, says whether that sync reached the disk (it
// is then synced now), or not (a crash of the process came before it: its
// pages stay in the page cache, unsynced).
func (f *faultFS) settleRetiring(ran func(called bool) bool) {
	f.mu.Lock()
	g, called := f.retiring, f.retireCalled
	f.retiring, f.retiringName, f.retireCalled = nil, "", false
	f.mu.Unlock()
	if g == nil {
		return
	}
	if ran(called) {
		g.Sync()
	}
	g.Close()
}

// faultFile is a handle faultFS gave out. name is the name it was opened
// under, which keys its injected faults (the n-th call of a kind on a
// file) whatever became of the file since; path is where its file is now
// (under fs.mu): a rename moves it, as a real file system's handle follows
// its file, and a remove, or a rename onto it, leaves it on no name ("").
// path keys the kills (kill, stepKill) and the retiring segment's sync: a
// spare renamed into place is that segment.
type faultFile struct {
	vfs.File
	fs   *faultFS
	name string
	path string
}

// where returns where the handle's file is now (path), "" if on no name.
func (f *faultFile) where() string {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	return f.path
}

// Close closes the handle, which Rename and Remove no longer follow.
func (f *faultFile) Close() error {
	f.fs.mu.Lock()
	delete(f.fs.open, f)
	f.fs.mu.Unlock()
	return f.File.Close()
}

func (f *faultFile) Write(p []byte) (int, error) {
	if f.fs.stepKill("write", f.where()) {
		return 0, errKilled
	}
	if err := f.fs.fail("write", f.name); err != nil {
		// A failed write may have stored part of p: a torn write.
		n, _ := f.File.Write(p[:len(p)/2])
		return n, err
	}
	return f.File.Write(p)
}

func (f *faultFile) WriteAt(p []byte, off int64) (int, error) {
	if f.fs.stepKill("write", f.where()) {
		return 0, errKilled
	}
	if err := f.fs.fail("write", f.name); err != nil {
		n, _ := f.File.WriteAt(p[:len(p)/2], off)
		return n, err
	}
	return f.File.WriteAt(p, off)
}

func (f *faultFile) ReadAt(p []byte, off int64) (int, error) {
	if f.fs.readFaults() {
		if err := f.fs.fail("read", f.name); err != nil {
			return 0, err
		}
	}
	return f.File.ReadAt(p, off)
}

// Sync syncs, or fails as Linux fails an fdatasync: the pages it did not
// write stay readable but are marked clean, so no later Sync writes them
// and a power cut loses them (vfs.SyncFailer).
func (f *faultFile) Sync() error {
	if p := f.where(); f.fs.kill(p) || f.fs.stepKill("sync", p) {
		return errKilled
	}
	if err := f.fs.fail("sync", f.name); err != nil {
		if sf, ok := f.File.(vfs.SyncFailer); ok {
			sf.FailSync()
		}
		return err
	}
	f.fs.mu.Lock()
	lie := f.fs.lieSync
	f.fs.mu.Unlock()
	if lie {
		return nil
	}
	if f.fs.deferRetiring(f) {
		return nil
	}
	return f.File.Sync()
}

func (f *faultFile) Truncate(size int64) error {
	if err := f.fs.fail("truncate", f.name); err != nil {
		return err
	}
	return f.File.Truncate(size)
}

var _ vfs.Allocator = (*faultFile)(nil)

// Allocate allocates, or fails with an injected fault (a full disk, an
// I/O error), having allocated nothing.
func (f *faultFile) Allocate(size int64) error {
	a, ok := f.File.(vfs.Allocator)
	if !ok {
		return fmt.Errorf("sim: allocate %s: %w", f.name, errors.ErrUnsupported)
	}
	if f.fs.stepKill("write", f.where()) {
		return errKilled
	}
	if err := f.fs.fail("write", f.name); err != nil {
		return err
	}
	return a.Allocate(size)
}

var _ vfs.Mapper = (*faultFile)(nil)

// Map maps the file, or fails with an injected fault.
func (f *faultFile) Map(size int64) ([]byte, error) {
	m, ok := f.File.(vfs.Mapper)
	if !ok {
		return nil, fmt.Errorf("sim: map %s: %w", f.name, errors.ErrUnsupported)
	}
	if err := f.fs.fail("map", f.name); err != nil {
		return nil, err
	}
	return m.Map(size)
}

var _ vfs.MapWriter = (*faultFile)(nil)

// WriteMapped writes into the file's mapping, through the machine's file
// system (vfs.Mem takes its lock), unless the process is dead: a dead
// process writes nothing. The check and the write are one step under
// f.fs.mu, under which the process dies (dieLocked, crash), so each of
// its mapped writes is wholly before its death, and in what the next
// process finds, or after it and nowhere: a copy into a mapping makes no
// call that could fail, and without this the journal's spare preparation
// or its writer, still running on the dead process's goroutines, went on
// writing the mapped bytes while the crash read them (a data race, and a
// state no crash of a real process leaves).
func (f *faultFile) WriteMapped(b []byte, off int64, p []byte) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.fs.dying {
		return
	}
	vfs.CopyMapped(f.File, b, off, p)
}

// Unmap unmaps, or fails with an injected fault (the mapping then stays).
func (f *faultFile) Unmap(b []byte) error {
	if f.fs.stepKill("unmap", f.where()) {
		return errKilled
	}
	if err := f.fs.fail("unmap", f.name); err != nil {
		return err
	}
	return f.File.(vfs.Mapper).Unmap(b)
}
