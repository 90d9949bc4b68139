package vfs

import (
	"errors"
	"fmt"
	"syscall"
)

var _ Allocator = osFile{}

// Allocate is fallocate(2) with mode 0: the blocks up to size are
// allocated as unwritten extents, which read as zeros, and the file's size
// grows to size.
func (f osFile) Allocate(size int64) error {
	for {
		err := syscall.Fallocate(int(f.Fd()), 0, 0, size)
		if err == syscall.EINTR {
			continue
		}
		if err == syscall.EOPNOTSUPP || err == syscall.ENOSYS {
			return fmt.Errorf("vfs: fallocate %s: %w (%w)", f.Name(), errors.ErrUnsupported, err)
		}
		if err != nil {
			return fmt.Errorf("vfs: fallocate %s: %w", f.Name(), err)
		}
		return nil
	}
}
