package journal

import (
	"bytes"
	"errors"
	iofs "io/fs"
	"log/slog"
	"os"
	"strings"
	"syscall"
	"testing"

	"allot/vfs"
)

// unreadableParents is a file system where the directories in denied
// cannot be opened for reading, as for a process that does not own a
// directory of mode 0711: they cannot be listed or synced (the tests run
// as root, which the kernel never refuses).
type unreadableParents struct {
	vfs.FS
	denied map[string]bool
}

func (u unreadableParents) refuse(op, dir string) error {
	return &os.PathError{Op: op, Path: dir, Err: syscall.EACCES}
}

func (u unreadableParents) List(dir string) ([]string, error) {
	if u.denied[dir] {
		return nil, u.refuse("open", dir)
	}
	return u.FS.List(dir)
}

func (u unreadableParents) SyncDir(dir string) error {
	if u.denied[dir] {
		return u.refuse("open", dir)
	}
	return u.FS.SyncDir(dir)
}

// A data directory that exists in a parent the process cannot read opened
// before the data directory's name was made durable at every open; since,
// the parent's sync failed with EACCES and the engine refused to start.
// The directory existed: it is used, with a warning. One made now in such
// a parent still fails, since its name cannot be made durable.
func TestADataDirectoryInAnUnreadableParent(t *testing.T) {
	mem := vfs.NewMem()
	if err := mem.MkdirAll("/srv/shared/data"); err != nil {
		t.Fatal(err)
	}
	fs := unreadableParents{FS: mem, denied: map[string]bool{"/srv/shared": true}}
	var logged bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logged, nil))
	if err := MakeDir(Options{FS: fs, Dir: "/srv/shared/data", Logger: logger}); err != nil {
		t.Fatalf("an existing data directory in an unreadable parent: %v", err)
	}
	if !strings.Contains(logged.String(), "cannot sync the data directory's parent") || !strings.Contains(logged.String(), "/srv/shared") {
		t.Fatalf("no warning naming the parent: %q", logged.String())
	}
	err := MakeDir(Options{FS: fs, Dir: "/srv/shared/new", Logger: logger})
	if !errors.Is(err, iofs.ErrPermission) || !strings.Contains(err.Error(), "/srv/shared") {
		t.Fatalf("a data directory made in an unreadable parent: want the permission error naming it, got %v", err)
	}
	// A missing directory under an unlistable one is made, and only the
	// parents of what was made are synced.
	fs.denied = map[string]bool{"/srv": true}
	if err := MakeDir(Options{FS: fs, Dir: "/srv/shared/more/data", Logger: logger}); err != nil {
		t.Fatalf("a data directory made under an unlistable ancestor: %v", err)
	}
}
