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
// directory sync changes nothing (ext4 and xfs journal directory entries,
// and a journal that cannot be written stops the file system instead). The
// n-th call of one kind on one file is decided by the seed, the kind, the
// file and n, not by the order of all calls: the engine's background
// goroutines (spare preallocation, the sync of full segments, snapshots)
// then do not shift the faults of the calls made in the seed's order.
// Reads fail only while reads is set (recovery), so that a run does not
// end in a loop of failed opens.
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
	// (vfs.Mem.CrashProcess, taken as the sync begins). That sync and
	// every later one fail, so the dead process acknowledges nothing
	// more; what it writes after goes where no one reads.
	killRate float64
	kills    bool
	mem      *vfs.Mem
	killed   *vfs.Mem
}

// errKilled is what a killed process's calls return.
var errKilled = errors.New("sim: the process was killed")

// kill decides whether the process dies in this sync of name; if it does,
// it takes what the next process finds.
func (f *faultFS) kill(name string) bool {
	f.mu.Lock()
	if f.killed != nil {
		f.mu.Unlock()
		return true
	}
	if !f.kills || f.killRate == 0 || !strings.HasPrefix(path.Base(name), "journal-") {
		f.mu.Unlock()
		return false
	}
	key := "kill " + name
	f.calls[key]++
	h := fnv.New64a()
	h.Write([]byte(key))
	dies := rand.New(rand.NewPCG(f.seed^h.Sum64(), f.calls[key])).Float64() < f.killRate
	f.mu.Unlock()
	if !dies {
		return false
	}
	killed := f.mem.CrashProcess()
	f.mu.Lock()
	f.killed = killed
	f.mu.Unlock()
	return true
}

// dead reports whether the process was killed in a sync.
func (f *faultFS) dead() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.killed != nil
}

// takeKilled returns what a process killed in a sync left, or nil.
func (f *faultFS) takeKilled() *vfs.Mem {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := f.killed
	f.killed = nil
	return k
}

func (f *faultFS) setKills(on bool) {
	f.mu.Lock()
	f.kills = on
	f.mu.Unlock()
}

func newFaultFS(fs vfs.FS, seed uint64, rate float64) *faultFS {
	return &faultFS{fs: fs, seed: seed, calls: map[string]uint64{}, rate: rate}
}

// fail decides one call: nil, or EIO or ENOSPC wrapped with what failed.
func (f *faultFS) fail(op, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
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
	return &faultFile{File: file, fs: f, name: name}, nil
}

func (f *faultFS) Create(name string) (vfs.File, error) {
	if err := f.fail("create", name); err != nil {
		return nil, err
	}
	file, err := f.fs.Create(name)
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
	if err := f.fail("remove", name); err != nil {
		return err
	}
	return f.fs.Remove(name)
}

func (f *faultFS) Rename(from, to string) error {
	if err := f.fail("rename", from); err != nil {
		return err
	}
	return f.fs.Rename(from, to)
}

func (f *faultFS) List(dir string) ([]string, error)   { return f.fs.List(dir) }
func (f *faultFS) MkdirAll(dir string) error           { return f.fs.MkdirAll(dir) }
func (f *faultFS) Lock(name string) (io.Closer, error) { return f.fs.Lock(name) }

func (f *faultFS) SyncDir(dir string) error {
	if err := f.fail("syncdir", dir); err != nil {
		return err
	}
	return f.fs.SyncDir(dir)
}

type faultFile struct {
	vfs.File
	fs   *faultFS
	name string
}

func (f *faultFile) Write(p []byte) (int, error) {
	if err := f.fs.fail("write", f.name); err != nil {
		// A failed write may have stored part of p: a torn write.
		n, _ := f.File.Write(p[:len(p)/2])
		return n, err
	}
	return f.File.Write(p)
}

func (f *faultFile) WriteAt(p []byte, off int64) (int, error) {
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
	if f.fs.kill(f.name) {
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
	return f.File.Sync()
}

func (f *faultFile) Truncate(size int64) error {
	if err := f.fs.fail("truncate", f.name); err != nil {
		return err
	}
	return f.File.Truncate(size)
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

// Unmap unmaps, or fails with an injected fault (the mapping then stays).
func (f *faultFile) Unmap(b []byte) error {
	if err := f.fs.fail("unmap", f.name); err != nil {
		return err
	}
	return f.File.(vfs.Mapper).Unmap(b)
}
