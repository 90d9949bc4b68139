package journal

import (
	"bytes"
	"errors"
	iofs "io/fs"
	"log/slog"
	"os"
	"path"
	"slices"
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
	if !strings.Contains(logged.String(), "cannot sync a parent of the data directory") || !strings.Contains(logged.String(), "parent=/srv/shared") {
		t.Fatalf("no warning naming the parent: %q", logged.String())
	}
	logged.Reset()
	err := MakeDir(Options{FS: fs, Dir: "/srv/shared/new", Logger: logger})
	if !errors.Is(err, iofs.ErrPermission) || !strings.Contains(err.Error(), "/srv/shared") {
		t.Fatalf("a data directory made in an unreadable parent: want the permission error naming it, got %v", err)
	}
	// Retried (a service manager restarting the process), the directory
	// the failed call made is found: its name is still not durable, which
	// the retry must say, not pass over.
	if err := MakeDir(Options{FS: fs, Dir: "/srv/shared/new", Logger: logger}); err != nil {
		t.Fatalf("the retry: %v", err)
	}
	if !strings.Contains(logged.String(), "parent=/srv/shared") {
		t.Fatalf("the retry of a failed make passed over the parent it could not sync: %q", logged.String())
	}
	// A directory made under one that exists, below an unreadable
	// ancestor: the names made are synced, the ancestor's warned of.
	logged.Reset()
	fs.denied = map[string]bool{"/srv": true}
	if err := MakeDir(Options{FS: fs, Dir: "/srv/shared/more/data", Logger: logger}); err != nil {
		t.Fatalf("a data directory made under an unreadable ancestor: %v", err)
	}
	if !strings.Contains(logged.String(), "parent=/srv ") {
		t.Fatalf("no warning naming the unreadable ancestor: %q", logged.String())
	}
	// A directory made in a parent that is not the unreadable one, two
	// levels down, whose own parent was made by the same call.
	if err := MakeDir(Options{FS: fs, Dir: "/srv/x/data", Logger: logger}); !errors.Is(err, iofs.ErrPermission) {
		t.Fatalf("a directory made in an unreadable parent: want the permission error, got %v", err)
	}
}

// syncRecorder is the real file system, recording the directories synced.
type syncRecorder struct {
	vfs.OS
	synced []string
}

func (r *syncRecorder) SyncDir(dir string) error {
	r.synced = append(r.synced, dir)
	return r.OS.SyncDir(dir)
}

// A relative data directory's parents go on past the working directory to
// the root: the walk stopped at ".", and the working directory's own name
// (made by mkdir -p just before, which syncs nothing) was never synced.
func TestARelativeDataDirectorysParentsUpToTheRoot(t *testing.T) {
	base := t.TempDir()
	t.Chdir(base)
	r := &syncRecorder{}
	if err := MakeDir(Options{FS: r, Dir: "a/data"}); err != nil {
		t.Fatal(err)
	}
	want := []string{base + "/a", base, path.Dir(base)}
	if len(r.synced) < len(want)+1 || !slices.Equal(r.synced[:len(want)], want) || r.synced[len(r.synced)-1] != "/" {
		t.Fatalf("synced %v, want %v and on up to /", r.synced, want)
	}
}
