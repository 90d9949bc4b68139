//go:build unix

package vfs

import (
	"fmt"
	"syscall"
)

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
