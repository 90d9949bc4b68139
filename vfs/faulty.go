package vfs

import (
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"sync"
)

// ErrInjected is the error Faulty returns for an injected failure.
var ErrInjected = errors.New("vfs: injected fault")

// Faulty wraps an FS and injects failures: after WriteBytesMax bytes have
// been written in all, a write stores only what fits (a torn write) and
// fails; SyncFail makes every Sync fail, as Linux fails an fdatasync: the
// bytes it did not write stay readable but are clean, not durable, and no
// later Sync writes them (SyncFailer, on files of a Mem). The zero limits
// inject nothing.
type Faulty struct {
	FS FS

	mu            sync.Mutex
	written       int64
	writeBytesMax int64 // with writeLimited: the byte count at which writes fail
	writeLimited  bool
	syncFail      bool
	createFail    bool
	hold          *syncHold // syncs held by HoldSyncs, or nil
}

// syncHold is a HoldSyncs in force.
type syncHold struct {
	prefix  string
	held    chan string
	release chan struct{}
	err     error // what the held syncs return once released
}

var _ FS = (*Faulty)(nil)

// NewFaulty wraps fs.
func NewFaulty(fs FS) *Faulty { return &Faulty{FS: fs} }

// FailWritesAfter makes writes fail once n more bytes have been written.
func (f *Faulty) FailWritesAfter(n int64) {
	f.mu.Lock()
	f.writeBytesMax = f.written + n
	f.writeLimited = true
	f.mu.Unlock()
}

// FailSyncs makes every Sync fail (or succeed again with false).
func (f *Faulty) FailSyncs(fail bool) {
	f.mu.Lock()
	f.syncFail = fail
	f.mu.Unlock()
}

// FailCreates makes every Create fail (or succeed again with false), as a
// full or read-only directory does.
func (f *Faulty) FailCreates(fail bool) {
	f.mu.Lock()
	f.createFail = fail
	f.mu.Unlock()
}

// HoldSyncs makes every Sync of a file whose base name starts with prefix
// wait until release is called, and then return err (nil: sync as usual).
// held receives the file's name as each such Sync starts waiting: a test
// can see that a sync is under way and check what did, or did not, wait
// for it. Its buffer holds 64 names; more are dropped, not blocked on.
func (f *Faulty) HoldSyncs(prefix string) (held <-chan string, release func(err error)) {
	h := &syncHold{prefix: prefix, held: make(chan string, 64), release: make(chan struct{})}
	f.mu.Lock()
	f.hold = h
	f.mu.Unlock()
	var once sync.Once
	return h.held, func(err error) {
		once.Do(func() {
			f.mu.Lock()
			h.err = err
			if f.hold == h {
				f.hold = nil
			}
			f.mu.Unlock()
			close(h.release)
		})
	}
}

func (f *Faulty) wrap(name string, file File, err error) (File, error) {
	if err != nil {
		return nil, err
	}
	return &faultyFile{File: file, fs: f, name: name}, nil
}

func (f *Faulty) Create(name string) (File, error) {
	f.mu.Lock()
	fail := f.createFail
	f.mu.Unlock()
	if fail {
		return nil, ErrInjected
	}
	file, err := f.FS.Create(name)
	return f.wrap(name, file, err)
}

func (f *Faulty) OpenAppend(name string) (File, error) {
	file, err := f.FS.OpenAppend(name)
	return f.wrap(name, file, err)
}

func (f *Faulty) OpenWrite(name string) (File, error) {
	file, err := f.FS.OpenWrite(name)
	return f.wrap(name, file, err)
}

func (f *Faulty) Open(name string) (File, error) {
	file, err := f.FS.Open(name)
	return f.wrap(name, file, err)
}

func (f *Faulty) Remove(name string) error { return f.FS.Remove(name) }

// Rename renames; a file open under the old name keeps that name for
// HoldSyncs (as a descriptor keeps its file, whatever it is called).
func (f *Faulty) Rename(from, to string) error        { return f.FS.Rename(from, to) }
func (f *Faulty) List(dir string) ([]string, error)   { return f.FS.List(dir) }
func (f *Faulty) MkdirAll(dir string) error           { return f.FS.MkdirAll(dir) }
func (f *Faulty) SyncDir(dir string) error            { return f.FS.SyncDir(dir) }
func (f *Faulty) Lock(name string) (io.Closer, error) { return f.FS.Lock(name) }

type faultyFile struct {
	File
	fs   *Faulty
	name string // the name it was opened or created by
}

func (f *faultyFile) Write(p []byte) (int, error) {
	return f.write(p, func(b []byte) (int, error) { return f.File.Write(b) })
}

func (f *faultyFile) WriteAt(p []byte, off int64) (int, error) {
	return f.write(p, func(b []byte) (int, error) { return f.File.WriteAt(b, off) })
}

// write stores what the byte budget allows of p, and fails if that is not
// all of it: a torn write.
func (f *faultyFile) write(p []byte, write func([]byte) (int, error)) (int, error) {
	f.fs.mu.Lock()
	allowed := int64(len(p))
	if f.fs.writeLimited {
		allowed = max(0, min(allowed, f.fs.writeBytesMax-f.fs.written))
	}
	f.fs.written += allowed
	f.fs.mu.Unlock()
	n, err := write(p[:allowed])
	if err != nil {
		return n, err
	}
	if allowed < int64(len(p)) {
		return n, ErrInjected
	}
	return n, nil
}

var _ Allocator = (*faultyFile)(nil)

// Allocate allocates on the wrapped file (ErrUnsupported where it
// cannot). The bytes it adds count against the write budget of
// FailWritesAfter, a full disk's stand-in: past it, nothing is allocated
// and it fails.
func (f *faultyFile) Allocate(size int64) error {
	a, ok := f.File.(Allocator)
	if !ok {
		return fmt.Errorf("vfs: allocate %s: %w", f.name, errors.ErrUnsupported)
	}
	cur, err := f.File.Size()
	if err != nil {
		return err
	}
	grow := max(0, size-cur)
	f.fs.mu.Lock()
	if f.fs.writeLimited && f.fs.written+grow > f.fs.writeBytesMax {
		f.fs.mu.Unlock()
		return ErrInjected
	}
	f.fs.written += grow
	f.fs.mu.Unlock()
	return a.Allocate(size)
}

func (f *faultyFile) Sync() error {
	f.fs.mu.Lock()
	fail, h := f.fs.syncFail, f.fs.hold
	f.fs.mu.Unlock()
	if fail {
		// As on Linux, the failed writeback leaves its pages clean.
		if sf, ok := f.File.(SyncFailer); ok {
			sf.FailSync()
		}
		return ErrInjected
	}
	if h != nil && strings.HasPrefix(path.Base(f.name), h.prefix) {
		select {
		case h.held <- f.name:
		default:
		}
		<-h.release
		f.fs.mu.Lock()
		err := h.err
		f.fs.mu.Unlock()
		if err != nil {
			return err
		}
	}
	return f.File.Sync()
}
