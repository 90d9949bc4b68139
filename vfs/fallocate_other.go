//go:build !linux

package vfs

import (
	"errors"
	"fmt"
)

var _ Allocator = osFile{}

// Allocate is not available here: the caller writes zeros instead.
func (f osFile) Allocate(size int64) error {
	return fmt.Errorf("vfs: allocate %s: %w", f.Name(), errors.ErrUnsupported)
}
