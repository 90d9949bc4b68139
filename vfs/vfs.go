package vfs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
)

// File is an open file. A File is used by one goroutine at a time, except
// that Sync may run concurrently with Write and WriteAt (the journal syncs
// on one goroutine while the next batch is written on another).
type File interface {
	io.Writer
	// WriteAt writes at an offset: the journal overwrites the zeros of a
	// preallocated segment. Not valid on a file opened with OpenAppend.
	io.WriterAt
	io.ReaderAt
	io.Closer
	// Sync makes every byte written so far durable (fdatasync).
	Sync() error
	// Truncate cuts the file to size bytes.
	Truncate(size int64) error
	// Size returns the file's current length.
	Size() (int64, error)
}

// UnlinkChecker is an optional File capability: Unlinked reports whether
// the open file has lost its last name (it, or its directory, was
// removed). The journal asks after each fdatasync, because a segment
// removed under a running engine takes writes and syncs without error
// while none of it will be there after a restart.
type UnlinkChecker interface {
	Unlinked() (bool, error)
}

// SyncFailer is an optional File capability of the simulated file systems
// (Mem): FailSync does to the file what a failed fdatasync (EIO, ENOSPC)
// does on Linux, where writeback errors mark the pages clean though their
// bytes never reached the disk: a reader still gets them from the page
// cache, a later Sync does not write them, a power cut loses them. Only
// writing them again makes them dirty again. Fault injection (Faulty and
// the simulator's) calls it before it returns a failed Sync.
type SyncFailer interface {
	FailSync()
}

// Mapper is an optional File capability: the file's first size bytes
// mapped shared and writable, so that a write is a copy into the page cache
// with no system call. Bytes copied there survive a crash of the process
// (the kernel owns the pages) but not of the machine until Sync. The file
// must already be at least size bytes long: touching a page past its end
// kills the process (SIGBUS). A file system that cannot map returns an
// error matching errors.ErrUnsupported.
type Mapper interface {
	Map(size int64) ([]byte, error)
	Unmap(b []byte) error
}

// MapWriter is an optional capability of a File that maps (Mapper): a
// write into its mapping goes through WriteMapped instead of being a
// plain copy, for a file system that must see it. The simulated one (Mem)
// does: its syncs and crashes read the mapped bytes, which a plain copy
// on another goroutine (the journal's spare preparation, its writer)
// would race with, and a simulated process crash must be a point that
// each of the dead process's writes is wholly before or after. Writers
// call CopyMapped, which takes the plain copy where a file has no
// WriteMapped (a real mapping).
type MapWriter interface {
	// WriteMapped copies p into b, a mapping of this file (Map), at off:
	// copy(b[off:], p).
	WriteMapped(b []byte, off int64, p []byte)
}

// CopyMapped copies p into b, a mapping of f, at off: through f's
// WriteMapped where f has one (MapWriter), else as the plain copy into
// the page cache a real shared mapping takes.
func CopyMapped(f File, b []byte, off int64, p []byte) {
	if w, ok := f.(MapWriter); ok {
		w.WriteMapped(b, off, p)
		return
	}
	copy(b[off:], p)
}

// Allocator is an optional File capability: the file's blocks up to size
// allocated (and the file at least size bytes long), reading as zeros
// without being written, as fallocate(2) does: the space is reserved (a
// full disk fails here, not in a later write or a mapped page's first
// touch, which is SIGBUS), and once a Sync made the allocation durable, a
// block never written reads as zeros after a power cut on any file
// system, where a block allocated by writing only later might show what
// it held before. A file system that cannot returns an error matching
// errors.ErrUnsupported.
type Allocator interface {
	Allocate(size int64) error
}

// FS is the file system. Names are paths; the journal keeps all its files
// in one directory.
type FS interface {
	// Create creates or truncates a file for writing.
	Create(name string) (File, error)
	// OpenAppend opens an existing file for writing at its end.
	OpenAppend(name string) (File, error)
	// OpenWrite opens an existing file for writing in place (WriteAt),
	// without truncating it.
	OpenWrite(name string) (File, error)
	// Open opens an existing file for reading.
	Open(name string) (File, error)
	Remove(name string) error
	Rename(from, to string) error
	// List returns the names (not paths) in dir, sorted.
	List(dir string) ([]string, error)
	MkdirAll(dir string) error
	// SyncDir makes the directory's entries (creates, renames, removes)
	// durable. A file's Sync does not: a new name needs its directory's.
	SyncDir(dir string) error
	// Lock takes an exclusive lock on the file name (created if missing),
	// held until the returned Closer is closed: one process per data
	// directory. It fails at once if another holder has it, with an error
	// matching ErrLocked.
	Lock(name string) (io.Closer, error)
}

// ErrNotExist is returned (wrapped) for a missing file, like fs.ErrNotExist.
var ErrNotExist = os.ErrNotExist

// ErrLocked is matched (errors.Is) by the error Lock returns when another
// holder has the lock, and by no other: a lock that cannot be taken for
// another reason (permissions, a failing disk) is not "in use".
var ErrLocked = errors.New("vfs: locked")

// lockedError is Lock's error for a lock another holder has.
type lockedError struct{ name, holder string }

func (e *lockedError) Error() string {
	return fmt.Sprintf("vfs: %s is locked by %s", e.name, e.holder)
}

func (e *lockedError) Is(target error) bool { return target == ErrLocked }

// OS is the real file system.
type OS struct{}

var _ FS = OS{}

type osFile struct{ *os.File }

func (f osFile) Sync() error { return fdatasync(f.File) }

func (f osFile) Size() (int64, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// Abs returns the absolute form of name, against the process's working
// directory (Absolver).
func (OS) Abs(name string) (string, error) { return filepath.Abs(name) }

// Absolver is an optional FS capability: the absolute form of a relative
// name, for a caller that must walk a name's parents up to the root (a
// relative name's walk stops at ".").
type Absolver interface {
	Abs(name string) (string, error)
}

func (OS) Create(name string) (File, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

func (OS) OpenAppend(name string) (File, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

func (OS) OpenWrite(name string) (File, error) {
	f, err := os.OpenFile(name, os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

func (OS) Open(name string) (File, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

func (OS) Remove(name string) error     { return os.Remove(name) }
func (OS) Rename(from, to string) error { return os.Rename(from, to) }
func (OS) MkdirAll(dir string) error    { return os.MkdirAll(dir, 0o755) }

func (OS) List(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names, nil
}

func (OS) SyncDir(dir string) error {
	d, err := os.Open(filepath.Clean(dir))
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if errors.Is(err, os.ErrInvalid) {
		// Some file systems cannot sync a directory; nothing to do there.
		return nil
	}
	return err
}

// ReadFile reads a whole file through fs.
func ReadFile(fs FS, name string) ([]byte, error) {
	f, err := fs.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return nil, err
	}
	buf := make([]byte, size)
	n, err := f.ReadAt(buf, 0)
	if err != nil && !(errors.Is(err, io.EOF) && int64(n) == size) {
		return nil, err
	}
	return buf[:n], nil
}

// WriteFileAtomic replaces the file name with data durably: a temporary
// file beside it (name + ".tmp"), synced, renamed over name, and the
// directory synced. A crash leaves the old contents or the new ones,
// never a torn file; on an error the temporary file is removed and name
// is as it was.
//
// What exists at name and is not a regular file (a device such as
// /dev/null, a FIFO, a symbolic link) is refused, not replaced: renaming
// over it would replace the device itself (run as root, a checkpoint
// written to /dev/null turned it into a regular file for every program on
// the machine).
func WriteFileAtomic(fs FS, name string, data []byte) error {
	if _, ok := fs.(OS); ok {
		if st, err := os.Lstat(name); err == nil && !st.Mode().IsRegular() {
			return fmt.Errorf("vfs: %s is not a regular file (%v): refusing to replace it", name, st.Mode().Type())
		}
	}
	tmp := name + ".tmp"
	f, err := fs.Create(tmp)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fs.Rename(tmp, name)
	}
	if err == nil {
		err = fs.SyncDir(filepath.Dir(name))
	}
	if err != nil {
		_ = fs.Remove(tmp)
	}
	return err
}
