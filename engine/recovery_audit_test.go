package engine

import (
	"errors"
	"io"
	"io/fs"
	"strings"
	"syscall"
	"testing"

	"allot/inventory"
	"allot/vfs"
)

// deadProcessFS is a file system whose Lock always succeeds: the lock a
// killed process held is gone with it, while its writes are still in the
// page cache (vfs.Mem keeps them until a Crash).
type deadProcessFS struct{ vfs.FS }

func (deadProcessFS) Lock(string) (io.Closer, error) { return io.NopCloser(nil), nil }

// fsync mode: a process killed between the write of a frame and its
// fdatasync leaves the frame in the page cache. The restart replays it and
// acknowledges new ops on top of it; a power cut after that must not lose
// those. Recovery synced the replayed frames of unsynced segments only: the
// killed process's frame was lost in a segment that was no longer the last,
// and the next Open refused the journal, with the acknowledged capture in it.
func TestFramesReplayedAfterAKillAreMadeDurable(t *testing.T) {
	mem := vfs.NewMem()
	killed := vfs.NewFaulty(deadProcessFS{mem})
	e1 := mustOpen(t, Config{Dir: "/d", FS: killed, TickInterval: -1})
	must(e1.Stock(rk("a", "w1"), 10, 1))
	held, release := killed.HoldSyncs("journal-")
	done := make(chan error, 1)
	go func() {
		_, err := e1.Capture(gk("a"), 3, nil) // written, its fdatasync never returns
		done <- err
	}()
	<-held
	defer func() {
		release(errors.New("the process was killed"))
		<-done
		e1.Close()
	}()

	// The restart, on the same machine.
	e2 := mustOpen(t, Config{Dir: "/d", FS: deadProcessFS{mem}, TickInterval: -1})
	defer e2.Close()
	if got := must(e2.Get(rk("a", "w1"))).Count; got != 7 {
		t.Fatalf("after the restart the row holds %d, want 7 (the capture's frame was written)", got)
	}
	if res := must(e2.Capture(gk("a"), 7, nil)); res.Code != inventory.CodeOK { // acknowledged: synced
		t.Fatalf("capture after the restart: %+v", res)
	}

	crashed := mem.Crash(nil) // then the power goes
	e3, err := Open(Config{Dir: "/d", FS: crashed, TickInterval: -1})
	if err != nil {
		t.Fatalf("after the power cut: %v; the capture of 7 was acknowledged in fsync mode", err)
	}
	defer e3.Close()
	if got := must(e3.Get(rk("a", "w1"))).Count; got != 0 {
		t.Fatalf("after the power cut the row holds %d, want 0", got)
	}
}

// lockFailFS fails to take the lock the way a failing disk does.
type lockFailFS struct{ vfs.FS }

func (lockFailFS) Lock(name string) (io.Closer, error) {
	return nil, &fs.PathError{Op: "open", Path: name, Err: syscall.EIO}
}

// Only a lock another holder has is "in use": any other failure to take it
// (a failing or full disk) is named as what it is. It used to be reported
// as "in use" too, which sends an operator after a second process that does
// not exist.
func TestDataDirectoryLockErrors(t *testing.T) {
	mem := vfs.NewMem()
	e := mustOpen(t, Config{Dir: "/d", FS: mem, TickInterval: -1})
	defer e.Close()
	_, err := Open(Config{Dir: "/d", FS: mem, TickInterval: -1})
	if !errors.Is(err, vfs.ErrLocked) || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("a second Open of a data directory: %v, want it refused as in use", err)
	}
	_, err = Open(Config{Dir: "/e", FS: lockFailFS{vfs.NewMem()}, TickInterval: -1})
	if !errors.Is(err, syscall.EIO) || errors.Is(err, vfs.ErrLocked) || strings.Contains(err.Error(), "in use") {
		t.Fatalf("a lock that fails with EIO: %v, want the I/O error, not \"in use\"", err)
	}
}
