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

type memNode struct {
	mu     sync.Mutex
	data   []byte
	synced int // len(data) at the last Sync; bytes before it are durable
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
	n := &memNode{}
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
		size := n.synced
		if keep != nil {
			k := keep(name, len(n.data)-n.synced)
			size += max(0, min(k, len(n.data)-n.synced))
		}
		data := append([]byte(nil), n.data[:size]...)
		n.mu.Unlock()
		c.files[name] = &memNode{data: data, synced: len(data)}
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
	f.node.data = append(f.node.data, p...)
	f.node.mu.Unlock()
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
	f.node.synced = len(f.node.data)
	f.node.mu.Unlock()
	return nil
}

func (f *memFile) Truncate(size int64) error {
	f.node.mu.Lock()
	defer f.node.mu.Unlock()
	if size < 0 || size > int64(len(f.node.data)) {
		return fmt.Errorf("vfs: truncate %s to %d: file has %d bytes", f.name, size, len(f.node.data))
	}
	f.node.data = f.node.data[:size]
	f.node.synced = min(f.node.synced, int(size))
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
