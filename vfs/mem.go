package vfs

import (
	"errors"
	"fmt"
	"io"
	"math/bits"
	"os"
	"path"
	"sort"
	"sync"
)

// PageBytes is the unit of Mem's model of the page cache: a crash keeps or
// loses each unsynced page on its own (CrashPages).
const PageBytes = 4096

// Mem is an in-memory FS that models durability: each file remembers what
// it held at its last Sync and which pages were written since, and a crash
// returns the FS a machine would find after losing power. CrashPages
// decides page by page what of each unsynced page reached the disk (none,
// all, or a torn prefix), in any combination: the kernel writes dirty
// pages back in no particular order. Crash keeps a prefix of the unsynced
// bytes instead (none: a lost write; some: a torn write; all: everything
// written back). CrashProcess is a crash of the process alone: the page
// cache survives as it is, still unsynced.
//
// With EnableMapping, files can be mapped (Mapper): a mapping is the
// file's own bytes, so a write through it is at once what the file holds
// and what a reader sees, and it is unsynced page cache, as with a real
// shared mapping, until Sync. A write into a mapping must go through
// the file's WriteMapped (vfs.CopyMapped), which takes the file's lock: a
// plain copy into it is a memory write no lock covers, which the syncs,
// reads and crashes that read the mapped bytes on other goroutines would
// race with (and a crash taken in the middle of one would find a state no
// real crash leaves). Mapping is off by default (EnableMapping).
//
// The namespace is modelled as on ext4 (data=ordered) or xfs, on the
// conservative side: a directory entry changed by Create, Rename or Remove
// is durable only once its directory is synced (SyncDir). A crash finds,
// in each directory, the entries it held at its last SyncDir, each naming
// the file it named then, with that file's durable bytes: a file created
// and synced whose directory was not synced since is gone; a rename not
// followed by SyncDir reverts (the file is back under its old name, and a
// file it replaced is back under the new one); so does a remove. A file's
// Sync makes its bytes and its size durable, never its name. A rename
// between two directories is two entry changes, each durable with its own
// directory's sync (a journaling file system commits both at once; nothing
// here renames across directories). Not modelled: a real disk may commit
// entry changes before any SyncDir too, in the order they were made (ext4
// commits its journal every few seconds, and a file's fsync commits the
// changes before it). A crash here reverts every one since the last
// SyncDir: the strict case for code that needs a name to be durable, and
// nothing here needs one to be lost.
//
// Create of an existing name truncates that file (O_TRUNC) instead of
// making another: the name still names it, so its Sync makes the new
// contents durable without a SyncDir, as on Linux.
//
// Truncate changes the size at once for readers; the new size is durable
// only with the file's next Sync (fdatasync writes a size change): a crash
// before it finds the file at its durable length, its old bytes past the
// cut included. After that Sync, bytes past the cut that were not written
// again read as zeros, never as the old bytes.
//
// Directories themselves (MkdirAll) are durable at once: the journal makes
// its directory once and never syncs its parent, which a real disk would
// need for a directory created just before a power cut.
type Mem struct {
	mu sync.Mutex
	// files is the namespace as the running system sees it; durable is
	// what a crash leaves of it: each directory's entries at its last
	// SyncDir. Both name the same nodes: a node's bytes are one file's,
	// whatever names it has.
	files   map[string]*memNode
	durable map[string]*memNode
	dirs    map[string]bool
	locks   map[string]bool
	mapping bool
}

// memNode keeps a file's current bytes and its durable bytes (as of the
// last Sync). The pages written since are marked in dirty (a bit a page);
// [dirtyFrom, dirtyTo) spans them, for Crash's prefix model. The pages
// under a mapping (the first mappedBytes bytes) may have been written
// without a call: which of them are dirty is found by comparing them with
// mappedSeen, the mapped bytes as the last look saw them. Rejected:
// comparing them with their durable copy, which takes a page a failed sync
// left clean but not durable (SyncFailer) for a dirty one again.
type memNode struct {
	mu        sync.Mutex
	data      []byte
	durable   []byte
	dirty     []uint64
	dirtyFrom int // -1: nothing written since the last Sync
	dirtyTo   int
	// truncTo is the shortest size the file was truncated to since the
	// last Sync, or -1: the durable bytes past it are stale once the next
	// Sync makes the cut durable.
	truncTo     int
	maps        int // mappings not yet unmapped
	mappedBytes int
	mappedSeen  []byte // len mappedBytes while mapped
}

func newMemNode(data []byte) *memNode {
	return &memNode{data: data, durable: append([]byte(nil), data...), dirtyFrom: -1, truncTo: -1}
}

// written records a write of [off, off+n).
func (n *memNode) written(off, size int) {
	if size == 0 {
		return
	}
	for p := off / PageBytes; p <= (off+size-1)/PageBytes; p++ {
		n.markDirty(p)
	}
	if n.dirtyFrom < 0 {
		n.dirtyFrom, n.dirtyTo = off, off+size
		return
	}
	n.dirtyFrom = min(n.dirtyFrom, off)
	n.dirtyTo = max(n.dirtyTo, off+size)
}

func (n *memNode) markDirty(p int) {
	for len(n.dirty) <= p/64 {
		n.dirty = append(n.dirty, 0)
	}
	n.dirty[p/64] |= 1 << (p % 64)
}

// collectMapped marks dirty the mapped pages that changed since the last
// look: the writes made through a mapping.
func (n *memNode) collectMapped() {
	end := min(n.mappedBytes, len(n.data), len(n.mappedSeen))
	for off := 0; off < end; off += PageBytes {
		to := min(off+PageBytes, end)
		if string(n.mappedSeen[off:to]) == string(n.data[off:to]) {
			continue
		}
		n.written(off, to-off)
		copy(n.mappedSeen[off:to], n.data[off:to])
	}
}

// failSync is a failed fdatasync (SyncFailer): the dirty pages are marked
// clean, not written. A size change (truncTo, or the end of data past the
// durable end) stays to be written by the next sync, which then finds
// zeros where the lost bytes were.
func (n *memNode) failSync() {
	n.collectMapped()
	clear(n.dirty)
	n.dirtyFrom = -1
}

// dirtyPages calls fn with each dirty page, in file order.
func (n *memNode) dirtyPages(fn func(p int)) {
	for w, word := range n.dirty {
		for word != 0 {
			b := bits.TrailingZeros64(word)
			word &^= 1 << b
			fn(w*64 + b)
		}
	}
}

func (n *memNode) sync() {
	n.collectMapped()
	if n.truncTo >= 0 {
		// The cut becomes durable: what lay past it is gone, and bytes
		// not written there since read as zeros.
		n.durable = n.durable[:min(len(n.durable), n.truncTo)]
		n.truncTo = -1
	}
	if len(n.durable) < len(n.data) {
		n.durable = append(n.durable, make([]byte, len(n.data)-len(n.durable))...)
	}
	n.durable = n.durable[:len(n.data)]
	n.dirtyPages(func(p int) {
		from := p * PageBytes
		if from < len(n.data) {
			to := min(from+PageBytes, len(n.data))
			copy(n.durable[from:to], n.data[from:to])
		}
	})
	clear(n.dirty)
	n.dirtyFrom = -1
}

var _ FS = (*Mem)(nil)

// NewMem returns an empty in-memory FS.
func NewMem() *Mem {
	return &Mem{files: map[string]*memNode{}, durable: map[string]*memNode{}, dirs: map[string]bool{"/": true, ".": true}}
}

// EnableMapping lets files be mapped (see Mem). Without it Map fails with
// errors.ErrUnsupported, and the journal writes with WriteAt.
func (m *Mem) EnableMapping() {
	m.mu.Lock()
	m.mapping = true
	m.mu.Unlock()
}

func clean(name string) string { return path.Clean(name) }

func (m *Mem) Create(name string) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	name = clean(name)
	if !m.dirs[path.Dir(name)] {
		return nil, &os.PathError{Op: "create", Path: name, Err: os.ErrNotExist}
	}
	n := m.files[name]
	if n != nil {
		// O_TRUNC: the same file, cut to nothing.
		n.mu.Lock()
		n.truncate(0)
		n.mu.Unlock()
	} else {
		n = newMemNode(nil)
		m.files[name] = n
	}
	return &memFile{name: name, node: n, write: true, fs: m}, nil
}

func (m *Mem) open(name string, write bool) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	name = clean(name)
	n := m.files[name]
	if n == nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: os.ErrNotExist}
	}
	return &memFile{name: name, node: n, write: write, fs: m}, nil
}

func (m *Mem) OpenAppend(name string) (File, error) { return m.open(name, true) }
func (m *Mem) OpenWrite(name string) (File, error)  { return m.open(name, true) }
func (m *Mem) Open(name string) (File, error)       { return m.open(name, false) }

func (m *Mem) Remove(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	name = clean(name)
	if m.files[name] == nil {
		return &os.PathError{Op: "remove", Path: name, Err: os.ErrNotExist}
	}
	delete(m.files, name)
	return nil
}

func (m *Mem) Rename(from, to string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	from, to = clean(from), clean(to)
	n := m.files[from]
	if n == nil {
		return &os.PathError{Op: "rename", Path: from, Err: os.ErrNotExist}
	}
	delete(m.files, from)
	m.files[to] = n
	return nil
}

func (m *Mem) List(dir string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	dir = clean(dir)
	if !m.dirs[dir] {
		return nil, &os.PathError{Op: "list", Path: dir, Err: os.ErrNotExist}
	}
	var names []string
	for name := range m.files {
		if path.Dir(name) == dir {
			names = append(names, path.Base(name))
		}
	}
	sort.Strings(names)
	return names, nil
}

func (m *Mem) MkdirAll(dir string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for d := clean(dir); ; d = path.Dir(d) {
		m.dirs[d] = true
		if d == "/" || d == "." {
			return nil
		}
	}
}

// SyncDir makes dir's entries durable as they are now: a crash finds
// exactly these (see Mem).
func (m *Mem) SyncDir(dir string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	dir = clean(dir)
	if !m.dirs[dir] {
		return &os.PathError{Op: "syncdir", Path: dir, Err: os.ErrNotExist}
	}
	for name := range m.durable {
		if path.Dir(name) == dir {
			delete(m.durable, name)
		}
	}
	for name, n := range m.files {
		if path.Dir(name) == dir {
			m.durable[name] = n
		}
	}
	return nil
}

// Crash returns what survives a power cut. keep(name, unsynced) says how
// many of a file's unsynced bytes survive, counted from the first unsynced
// byte (none: a lost write; some: a torn write; all: written back before
// the power went); nil keeps none. The namespace is the durable one (see
// Mem). A process crash is CrashProcess.
func (m *Mem) Crash(keep func(name string, unsynced int) int) *Mem {
	return m.crash(func(name string, n *memNode, data []byte) []byte {
		if n.dirtyFrom < 0 || keep == nil {
			return data
		}
		// A prefix of the unsynced range reached the disk.
		k := max(0, min(keep(name, n.dirtyTo-n.dirtyFrom), n.dirtyTo-n.dirtyFrom))
		return writeBack(data, n.data, n.dirtyFrom, k)
	})
}

// CrashPages returns what survives a power cut that wrote back an
// arbitrary subset of the dirty pages: keep(name, page) says how many
// leading bytes of that unsynced page of the file reached the disk (0:
// none, PageBytes: all of it, anything between: a page torn there). Pages
// dirtied through a mapping count as well. A file is as long as its
// durable bytes or the end of the last byte kept, whichever is longer; a
// byte never written back reads as it was at the last Sync, or as zero
// past the durable end.
func (m *Mem) CrashPages(keep func(name string, page int64) int) *Mem {
	return m.crash(func(name string, n *memNode, data []byte) []byte {
		n.dirtyPages(func(p int) {
			if from := p * PageBytes; from < len(n.data) {
				k := max(0, min(keep(name, int64(p)), PageBytes, len(n.data)-from))
				data = writeBack(data, n.data, from, k)
			}
		})
		return data
	})
}

// CrashProcess returns what the next process finds after this one dies
// with the machine still up: the kernel's page cache and namespace as they
// are, every byte written and every directory entry made, and what is
// durable unchanged. A power cut of the returned Mem (Crash, CrashPages)
// loses what one of this Mem would: a crash of the process makes nothing
// durable. Rejected: a crash keeping every unsynced byte (Crash with a
// keep of all), which makes them durable too, so that recovery's own sync
// of what it replays went untested. Locks and mappings die with the
// process. The old Mem stays usable, for a process that goes on writing to
// it unseen.
func (m *Mem) CrashProcess() *Mem {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := NewMem()
	c.mapping = m.mapping
	for d := range m.dirs {
		c.dirs[d] = true
	}
	made := map[*memNode]*memNode{}
	copyNode := func(n *memNode) *memNode {
		if made[n] == nil {
			n.mu.Lock()
			n.collectMapped()
			made[n] = &memNode{data: append([]byte(nil), n.data...), durable: append([]byte(nil), n.durable...),
				dirty: append([]uint64(nil), n.dirty...), dirtyFrom: n.dirtyFrom, dirtyTo: n.dirtyTo, truncTo: n.truncTo}
			n.mu.Unlock()
		}
		return made[n]
	}
	for name, n := range m.files {
		c.files[name] = copyNode(n)
	}
	for name, n := range m.durable {
		c.durable[name] = copyNode(n)
	}
	return c
}

// crash builds the FS a crash leaves: every directory, the durable
// namespace, and each file in it with its durable bytes and what
// writeBackFn adds of its unsynced ones.
func (m *Mem) crash(writeBackFn func(name string, n *memNode, durable []byte) []byte) *Mem {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := NewMem()
	c.mapping = m.mapping
	for d := range m.dirs {
		c.dirs[d] = true
	}
	// In name order, so that a file with two durable names is written
	// back once, asked about under the first.
	durableNames := make([]string, 0, len(m.durable))
	for name := range m.durable {
		durableNames = append(durableNames, name)
	}
	sort.Strings(durableNames)
	made := map[*memNode]*memNode{}
	for _, name := range durableNames {
		n := m.durable[name]
		if made[n] == nil {
			n.mu.Lock()
			n.collectMapped()
			data := writeBackFn(name, n, append([]byte(nil), n.durable...))
			n.mu.Unlock()
			made[n] = newMemNode(data)
		}
		c.files[name] = made[n]
		c.durable[name] = made[n]
	}
	return c
}

// writeBack copies k bytes of current at from into durable, growing it as
// needed.
func writeBack(durable, current []byte, from, k int) []byte {
	if k <= 0 {
		return durable
	}
	if end := from + k; end > len(durable) {
		durable = append(durable, make([]byte, end-len(durable))...)
	}
	copy(durable[from:from+k], current[from:from+k])
	return durable
}

// Corrupt flips the bits of the byte at offset in file name.
func (m *Mem) Corrupt(name string, offset int64) error {
	m.mu.Lock()
	n := m.files[clean(name)]
	m.mu.Unlock()
	if n == nil {
		return &os.PathError{Op: "corrupt", Path: name, Err: os.ErrNotExist}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if offset < 0 || offset >= int64(len(n.data)) {
		return fmt.Errorf("vfs: corrupt %s: offset %d outside the file's %d bytes", name, offset, len(n.data))
	}
	n.data[offset] ^= 0xff
	return nil
}

// Names returns every file path, sorted: for tests.
func (m *Mem) Names() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var names []string
	for name := range m.files {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

type memFile struct {
	name   string
	node   *memNode
	fs     *Mem
	write  bool
	closed bool
}

var _ Mapper = (*memFile)(nil)

// Map returns the file's first size bytes, shared: writing them writes the
// file (unsynced until Sync). It fails with errors.ErrUnsupported unless
// the Mem has EnableMapping, and for a file shorter than size (a real
// mapping would fault past the end).
func (f *memFile) Map(size int64) ([]byte, error) {
	f.fs.mu.Lock()
	on := f.fs.mapping
	f.fs.mu.Unlock()
	if !on {
		return nil, fmt.Errorf("vfs: map %s: mapping is off on this memory file system: %w", f.name, errors.ErrUnsupported)
	}
	if f.closed || !f.write {
		return nil, &os.PathError{Op: "map", Path: f.name, Err: os.ErrPermission}
	}
	f.node.mu.Lock()
	defer f.node.mu.Unlock()
	if size <= 0 || size > int64(len(f.node.data)) {
		return nil, fmt.Errorf("vfs: map %s: %d bytes of a file of %d", f.name, size, len(f.node.data))
	}
	f.node.collectMapped()
	f.node.maps++
	if int(size) > f.node.mappedBytes {
		// The newly mapped bytes, as they are: nothing wrote them
		// through a mapping yet.
		f.node.mappedSeen = append(f.node.mappedSeen, f.node.data[f.node.mappedBytes:size]...)
		f.node.mappedBytes = int(size)
	}
	return f.node.data[:size:size], nil
}

var _ MapWriter = (*memFile)(nil)

// WriteMapped copies p into b, a mapping of the file, at off, under the
// file's lock, as every other write and every read of its bytes is: a
// crash (CrashProcess, CrashPages) finds each such write whole or not at
// all, whatever goroutine makes it. Like a write into a real mapping it
// is a copy into the page cache: the pages it changed are dirty until
// Sync.
func (f *memFile) WriteMapped(b []byte, off int64, p []byte) {
	f.node.mu.Lock()
	copy(b[off:], p)
	f.node.mu.Unlock()
}

// Unmap ends a mapping. What was written through it stays unsynced page
// cache until Sync, as with a real mapping.
func (f *memFile) Unmap(b []byte) error {
	f.node.mu.Lock()
	defer f.node.mu.Unlock()
	if f.node.maps == 0 {
		return fmt.Errorf("vfs: unmap %s: not mapped", f.name)
	}
	f.node.collectMapped()
	if f.node.maps--; f.node.maps == 0 {
		f.node.mappedBytes, f.node.mappedSeen = 0, nil
	}
	return nil
}

func (f *memFile) Write(p []byte) (int, error) {
	if f.closed {
		return 0, &os.PathError{Op: "write", Path: f.name, Err: os.ErrClosed}
	}
	if !f.write {
		return 0, &os.PathError{Op: "write", Path: f.name, Err: os.ErrPermission}
	}
	f.node.mu.Lock()
	f.node.written(len(f.node.data), len(p))
	f.node.data = append(f.node.data, p...)
	f.node.mu.Unlock()
	return len(p), nil
}

func (f *memFile) WriteAt(p []byte, off int64) (int, error) {
	if f.closed {
		return 0, &os.PathError{Op: "write", Path: f.name, Err: os.ErrClosed}
	}
	if !f.write {
		return 0, &os.PathError{Op: "write", Path: f.name, Err: os.ErrPermission}
	}
	if off < 0 {
		return 0, &os.PathError{Op: "write", Path: f.name, Err: os.ErrInvalid}
	}
	f.node.mu.Lock()
	defer f.node.mu.Unlock()
	if end := int(off) + len(p); end > len(f.node.data) {
		f.node.data = append(f.node.data, make([]byte, end-len(f.node.data))...)
	}
	copy(f.node.data[off:], p)
	f.node.written(int(off), len(p))
	return len(p), nil
}

var _ Allocator = (*memFile)(nil)

// Allocate grows the file to size with zeros, written as a write would
// (durable with the next Sync); bytes already there are kept.
func (f *memFile) Allocate(size int64) error {
	if f.closed {
		return &os.PathError{Op: "allocate", Path: f.name, Err: os.ErrClosed}
	}
	if !f.write {
		return &os.PathError{Op: "allocate", Path: f.name, Err: os.ErrPermission}
	}
	if size <= 0 {
		return &os.PathError{Op: "allocate", Path: f.name, Err: os.ErrInvalid}
	}
	f.node.mu.Lock()
	defer f.node.mu.Unlock()
	if old := len(f.node.data); int(size) > old {
		f.node.data = append(f.node.data, make([]byte, int(size)-old)...)
		f.node.written(old, int(size)-old)
	}
	return nil
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	f.node.mu.Lock()
	defer f.node.mu.Unlock()
	if off >= int64(len(f.node.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.node.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *memFile) Sync() error {
	if f.closed {
		return &os.PathError{Op: "sync", Path: f.name, Err: os.ErrClosed}
	}
	f.node.mu.Lock()
	f.node.sync()
	f.node.mu.Unlock()
	return nil
}

var _ SyncFailer = (*memFile)(nil)

// FailSync: see SyncFailer.
func (f *memFile) FailSync() {
	f.node.mu.Lock()
	f.node.failSync()
	f.node.mu.Unlock()
}

func (f *memFile) Truncate(size int64) error {
	f.node.mu.Lock()
	defer f.node.mu.Unlock()
	if size < 0 || size > int64(len(f.node.data)) {
		return fmt.Errorf("vfs: truncate %s to %d: file has %d bytes", f.name, size, len(f.node.data))
	}
	f.node.truncate(int(size))
	return nil
}

// truncate cuts the file to size for readers; the cut is durable with the
// next sync (truncTo).
func (n *memNode) truncate(size int) {
	n.collectMapped()
	for p := (size + PageBytes - 1) / PageBytes; p/64 < len(n.dirty); p++ {
		n.dirty[p/64] &^= 1 << (p % 64)
	}
	n.mappedBytes = min(n.mappedBytes, size)
	n.mappedSeen = n.mappedSeen[:min(len(n.mappedSeen), size)]
	n.data = n.data[:size]
	if n.truncTo < 0 || size < n.truncTo {
		n.truncTo = size
	}
	if n.dirtyFrom >= size {
		n.dirtyFrom = -1
	} else if n.dirtyFrom >= 0 {
		n.dirtyTo = min(n.dirtyTo, size)
	}
}

func (f *memFile) Size() (int64, error) {
	f.node.mu.Lock()
	defer f.node.mu.Unlock()
	return int64(len(f.node.data)), nil
}

func (f *memFile) Close() error {
	if f.closed {
		return &os.PathError{Op: "close", Path: f.name, Err: os.ErrClosed}
	}
	f.closed = true
	return nil
}

type memLock struct {
	m    *Mem
	name string
}

func (l memLock) Close() error {
	l.m.mu.Lock()
	defer l.m.mu.Unlock()
	delete(l.m.locks, l.name)
	return nil
}

// Lock takes an in-process lock; it does not survive Crash.
func (m *Mem) Lock(name string) (io.Closer, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	name = clean(name)
	if m.locks == nil {
		m.locks = map[string]bool{}
	}
	if m.locks[name] {
		return nil, &lockedError{name: name, holder: "another holder"}
	}
	m.locks[name] = true
	return memLock{m: m, name: name}, nil
}
