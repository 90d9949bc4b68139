//go:build unix

package vfs

import (
	"fmt"
	"syscall"
)

// Mapper is an optional File capability: the file's first size bytes
// mapped shared and writable, so that a write is a copy into the page cache
// with no system call. Bytes copied there survive a crash of the process
// (the kernel owns the pages) but not of the machine until Sync. The file
// must already be at least size bytes long: touching a page past its end
// kills the process (SIGBUS).
type Mapper interface {
	Map(size int64) ([]byte, error)
	Unmap(b []byte) error
}

var _ Mapper = osFile{}

func (f osFile) Map(size int64) ([]byte, error) {
	b, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("vfs: mmap %s: %w", f.Name(), err)
	}
	return b, nil
}

func (f osFile) Unmap(b []byte) error {
	if err := syscall.Munmap(b); err != nil {
		return fmt.Errorf("vfs: munmap %s: %w", f.Name(), err)
	}
	return nil
}
