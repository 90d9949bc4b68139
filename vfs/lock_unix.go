//go:build unix

package vfs

import (
	"fmt"
	"io"
	"os"
	"syscall"
)

type osLock struct{ f *os.File }

func (l osLock) Close() error {
	// Closing the descriptor releases the flock.
	return l.f.Close()
}

func (OS) Lock(name string) (io.Closer, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if err == syscall.EWOULDBLOCK {
			return nil, &lockedError{name: name, holder: "another process"}
		}
		return nil, fmt.Errorf("vfs: lock %s: %w", name, err)
	}
	return osLock{f}, nil
}
