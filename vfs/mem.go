package vfs

import (
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"sync"
)

// Mem is an in-memory FS that models durability: each file remembers what
// it held at its last Sync, and Crash returns the FS a machine would find
// after losing power, keeping of each file the synced bytes plus as much of
// the unsynced tail as the caller says (none: a lost write; some: a torn
// write; all: a process crash, where the OS still had it).
//
// Directory entries are treated as durable at once. That is weaker than a
// real disk, where a create is durable only after SyncDir; the journal syncs
// the directory after every create and rename anyway.
type Mem struct {
	mu    sync.Mutex
	files map[string]*memNode
	dirs  map[string]bool
	locks map[string]bool
}

// memNode keeps a file's current bytes and its durable bytes (as of the
// last Sync). Writes since then fall in one range, [dirtyFrom, dirtyTo):
// enough for files written front to back, as the journal writes them.
type memNode struct {
	mu        sync.Mutex
	data      []byte
	durable   []byte
	dirtyFrom int // -1: nothing written since the last Sync
	dirtyTo   int
}

func newMemNode(data []byte) *memNode {
	return &memNode{data: data, durable: append([]byte(nil), data...), dirtyFrom: -1}
}

// written records a write of [off, off+n).
func (n *memNode) written(off, size int) {
	if size == 0 {
		return
	}
	if n.dirtyFrom < 0 {
		n.dirtyFrom, n.dirtyTo = off, off+size
		return
	}
	n.dirtyFrom = min(n.dirtyFrom, off)
	n.dirtyTo = max(n.dirtyTo, off+size)
}

func (n *memNode) sync() {
	if n.dirtyFrom < 0 {
		if len(n.durable) != len(n.data) {
			n.durable = append(n.durable[:0], n.data...)
		}
		return
	}
	if len(n.durable) < len(n.data) {
		n.durable = append(n.durable, make([]byte, len(n.data)-len(n.durable))...)
	}
	n.durable = n.durable[:len(n.data)]
	copy(n.durable[n.dirtyFrom:n.dirtyTo], n.data[n.dirtyFrom:n.dirtyTo])
	n.dirtyFrom = -1
}

var _ FS = (*Mem)(nil)

// NewMem returns an empty in-memory FS.
func NewMem() *Mem {
	return &Mem{files: map[string]*memNode{}, dirs: map[string]bool{"/": true, ".": true}}
}

func clean(name string) string { return path.Clean(name) }

func (m *Mem) Create(name string) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	name = clean(name)
	if !m.dirs[path.Dir(name)] {
		return nil, &os.PathError{Op: "create", Path: name, Err: os.ErrNotExist}
	}
	n := newMemNode(nil)
	m.files[name] = n
	return &memFile{name: name, node: n, write: true}, nil
}

func (m *Mem) open(name string, write bool) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	name = clean(name)
	n := m.files[name]
	if n == nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: os.ErrNotExist}
	}
	return &memFile{name: name, node: n, write: write}, nil
}

func (m *Mem) OpenAppend(name string) (File, error) { return m.open(name, true) }
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

func (m *Mem) SyncDir(dir string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.dirs[clean(dir)] {
		return &os.PathError{Op: "syncdir", Path: dir, Err: os.ErrNotExist}
	}
	return nil
}

// Crash returns what survives a crash. keep(name, unsynced) says how many of
// a file's unsynced tail bytes survive; nil keeps none (power loss with
// every unsynced write lost).
func (m *Mem) Crash(keep func(name string, unsynced int) int) *Mem {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := NewMem()
	for d := range m.dirs {
		c.dirs[d] = true
	}
	for name, n := range m.files {
		n.mu.Lock()
		data := append([]byte(nil), n.durable...)
		if n.dirtyFrom >= 0 && keep != nil {
			// A prefix of the unsynced range reached the disk.
			k := max(0, min(keep(name, n.dirtyTo-n.dirtyFrom), n.dirtyTo-n.dirtyFrom))
			if end := n.dirtyFrom + k; end > len(data) {
				data = append(data, make([]byte, end-len(data))...)
			}
			copy(data[n.dirtyFrom:], n.data[n.dirtyFrom:n.dirtyFrom+k])
		}
		n.mu.Unlock()
		c.files[name] = newMemNode(data)
	}
	return c
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
	write  bool
	closed bool
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

func (f *memFile) Truncate(size int64) error {
	f.node.mu.Lock()
	defer f.node.mu.Unlock()
	if size < 0 || size > int64(len(f.node.data)) {
		return fmt.Errorf("vfs: truncate %s to %d: file has %d bytes", f.name, size, len(f.node.data))
	}
	// A truncate is treated as durable at once, like directory entries.
	f.node.data = f.node.data[:size]
	f.node.durable = f.node.durable[:min(len(f.node.durable), int(size))]
	if f.node.dirtyFrom >= int(size) {
		f.node.dirtyFrom = -1
	} else if f.node.dirtyFrom >= 0 {
		f.node.dirtyTo = min(f.node.dirtyTo, int(size))
	}
	return nil
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
		return nil, fmt.Errorf("vfs: %s is locked", name)
	}
	m.locks[name] = true
	return memLock{m: m, name: name}, nil
}
