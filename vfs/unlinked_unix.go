//go:build unix

package vfs

import (
	"fmt"
	"syscall"
)

// Unlinked reports whether the file's last name is gone: its directory, or
// the file itself, was removed while it was open. Writes to it still
// succeed, and fsync too, but nothing reaches a file a restart can find.
func (f osFile) Unlinked() (bool, error) {
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		return false, fmt.Errorf("vfs: fstat %s: %w", f.Name(), err)
	}
	return st.Nlink == 0, nil
}
