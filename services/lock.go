package services

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// lockPollInterval is how often a waiting lock retries. flock itself cannot
// be cancelled, so a waiter polls with LOCK_NB and watches its context.
const lockPollInterval = 50 * time.Millisecond

// fileLock is an exclusive flock on one file. flock locks belong to the open
// file description, so two lockers conflict whether they are two processes
// or two goroutines of one. The file is opened close-on-exec (Go's default),
// so a server started while the lock is held does not inherit it.
type fileLock struct {
	f *os.File
}

// lockFile takes the lock on path, creating the file if needed, waiting
// until it is free or ctx is done.
func lockFile(ctx context.Context, path string) (*fileLock, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("services: opening lock %s: %w", path, err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return &fileLock{f: f}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, fmt.Errorf("services: locking %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("services: waiting for lock %s (another allot process is starting or stopping this server): %w", path, ctx.Err())
		case <-time.After(lockPollInterval):
		}
	}
}

// unlock releases the lock. Closing the file drops the flock.
func (l *fileLock) unlock() {
	l.f.Close()
}
