package main

import (
	"encoding/binary"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// journalBytes is the journal file's size, preallocated and synced when
// it opens, so that a commit's fdatasync writes data only (no size or
// block allocation to make durable), as allot's preallocated segments
// do. Commits go round it.
const journalBytes = 64 << 20

// journal is respnull's durable path with -sync: one thread, and at the end
// of each event-loop round that answered a write, one 8-byte record (a
// counter) written and one fdatasync before that round's replies go out.
// That is Redis's appendfsync always, and the least a server that
// acknowledges writes only once they are on disk can do per round: no
// engine, no state, no frame. It keeps nothing worth reading.
type journal struct {
	f       *os.File
	off     int64
	commits uint64
	rec     [8]byte
}

// openJournal creates (or truncates) path and preallocates it.
func openJournal(path string) (*journal, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	if _, err := f.WriteAt(make([]byte, journalBytes), 0); err != nil {
		f.Close()
		return nil, fmt.Errorf("preallocate %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return nil, fmt.Errorf("sync %s: %w", path, err)
	}
	return &journal{f: f}, nil
}

// commit writes the next record and makes it durable.
func (j *journal) commit() error {
	j.commits++
	binary.LittleEndian.PutUint64(j.rec[:], j.commits)
	if _, err := j.f.WriteAt(j.rec[:], j.off); err != nil {
		return fmt.Errorf("journal write: %w", err)
	}
	if err := unix.Fdatasync(int(j.f.Fd())); err != nil {
		return fmt.Errorf("journal fdatasync: %w", err)
	}
	j.off = (j.off + int64(len(j.rec))) % journalBytes
	return nil
}

func (j *journal) close() error { return j.f.Close() }
