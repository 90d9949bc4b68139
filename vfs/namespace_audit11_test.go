package vfs

import (
	"errors"
	"os"
	"slices"
	"testing"
)

// names lists dir in fs, failing the test on an error.
func names(t *testing.T, fs FS, dir string) []string {
	t.Helper()
	got, err := fs.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func absent(t *testing.T, fs FS, name string) {
	t.Helper()
	if _, err := fs.Open(name); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s: open %v, want it absent", name, err)
	}
}

// A new file's name is durable only once its directory is synced: the
// file's own Sync makes its bytes durable, not its name (ext4 and xfs may
// lose a create that no directory fsync followed). Mem treated every
// directory entry as durable at once.
func TestMemCreateIsDurableOnlyAfterSyncDir(t *testing.T) {
	m := NewMem()
	m.MkdirAll("/d")
	f, _ := m.Create("/d/f")
	write(t, f, "synced")
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if got := names(t, m, "/d"); !slices.Equal(got, []string{"f"}) {
		t.Fatalf("before the crash /d holds %v", got)
	}
	lost := m.Crash(nil)
	if got := names(t, lost, "/d"); len(got) != 0 {
		t.Fatalf("a file whose directory was never synced survived a power cut: %v", got)
	}
	absent(t, lost, "/d/f")
	// Another directory's sync does not help.
	m.MkdirAll("/e")
	m.SyncDir("/e")
	absent(t, m.Crash(nil), "/d/f")

	if err := m.SyncDir("/d"); err != nil {
		t.Fatal(err)
	}
	if got := content(t, m.Crash(nil), "/d/f"); got != "synced" {
		t.Fatalf("after SyncDir the crash left %q", got)
	}
}

// A rename not followed by a sync of the directory reverts at a power cut:
// the file is back under its old name, and the file it replaced is back
// under the new one, each with its durable bytes. The write-temporary,
// sync, rename, sync-directory sequence (WriteFileAtomic) needs its last
// step.
func TestMemRenameRevertsWithoutSyncDir(t *testing.T) {
	m := NewMem()
	m.MkdirAll("/d")
	old, _ := m.Create("/d/x")
	write(t, old, "old")
	old.Sync()
	m.SyncDir("/d")

	tmp, _ := m.Create("/d/x.tmp")
	write(t, tmp, "new")
	tmp.Sync()
	if err := m.Rename("/d/x.tmp", "/d/x"); err != nil {
		t.Fatal(err)
	}
	if got := content(t, m, "/d/x"); got != "new" {
		t.Fatalf("a reader sees %q after the rename", got)
	}
	crashed := m.Crash(nil)
	if got := content(t, crashed, "/d/x"); got != "old" {
		t.Fatalf("a rename with no directory sync survived a power cut: /d/x holds %q", got)
	}
	if got := names(t, crashed, "/d"); !slices.Equal(got, []string{"x"}) {
		t.Fatalf("after the crash /d holds %v, want [x] (x.tmp was never durable)", got)
	}

	// A durable file renamed, no directory sync: back under its old name.
	m.SyncDir("/d")
	m.Rename("/d/x", "/d/y")
	crashed = m.Crash(nil)
	if got := names(t, crashed, "/d"); !slices.Equal(got, []string{"x"}) || content(t, crashed, "/d/x") != "new" {
		t.Fatalf("after the crash /d holds %v, want the renamed file back as x", got)
	}
	m.SyncDir("/d")
	if got := names(t, m.Crash(nil), "/d"); !slices.Equal(got, []string{"y"}) {
		t.Fatalf("a synced rename: /d holds %v after the crash", got)
	}
}

// A remove not followed by a directory sync reverts: the file is back with
// its durable bytes (its unsynced ones lost as ever).
func TestMemRemoveRevertsWithoutSyncDir(t *testing.T) {
	m := NewMem()
	m.MkdirAll("/d")
	f, _ := m.Create("/d/f")
	write(t, f, "durable")
	f.Sync()
	m.SyncDir("/d")
	write(t, f, " and not")
	if err := m.Remove("/d/f"); err != nil {
		t.Fatal(err)
	}
	absent(t, m, "/d/f")
	if got := content(t, m.Crash(nil), "/d/f"); got != "durable" {
		t.Fatalf("an unsynced remove: the crash left %q, want the durable bytes back", got)
	}
	m.SyncDir("/d")
	absent(t, m.Crash(nil), "/d/f")
}

// Create of an existing name truncates that file (O_TRUNC): the name still
// names it, so its Sync makes the new contents durable with no directory
// sync, as on Linux.
func TestMemCreateOverAnExistingNameTruncatesIt(t *testing.T) {
	m := NewMem()
	m.MkdirAll("/d")
	f, _ := m.Create("/d/f")
	write(t, f, "first contents")
	f.Sync()
	m.SyncDir("/d")
	g, _ := m.Create("/d/f")
	if got := content(t, m, "/d/f"); got != "" {
		t.Fatalf("after Create the file reads %q", got)
	}
	write(t, g, "second")
	if got := content(t, m.Crash(nil), "/d/f"); got != "first contents" {
		t.Fatalf("an unsynced truncate and write survived a power cut: %q", got)
	}
	g.Sync()
	if got := content(t, m.Crash(nil), "/d/f"); got != "second" {
		t.Fatalf("the synced new contents: the crash left %q", got)
	}
}

// A truncate's new size is durable only with the file's next Sync
// (fdatasync writes a size change): a crash before it finds the file at
// its durable length with its old bytes, and bytes written past the cut
// after it read as written or, where nothing was written, as zeros, never
// as the old bytes. Mem made a truncate durable at once.
func TestMemTruncateIsDurableOnlyAfterSync(t *testing.T) {
	m := NewMem()
	m.MkdirAll("/d")
	f, _ := m.Create("/d/f")
	m.SyncDir("/d")
	write(t, f, "0123456789abcdef")
	f.Sync()
	if err := f.Truncate(4); err != nil {
		t.Fatal(err)
	}
	if got := content(t, m, "/d/f"); got != "0123" {
		t.Fatalf("a reader sees %q after the truncate", got)
	}
	if got := content(t, m.Crash(nil), "/d/f"); got != "0123456789abcdef" {
		t.Fatalf("an unsynced truncate survived a power cut: %q", got)
	}
	// Grown again past the cut with a gap: the gap is zeros once synced.
	f.WriteAt([]byte("XY"), 10)
	f.Sync()
	want := "0123\x00\x00\x00\x00\x00\x00XY"
	if got := content(t, m.Crash(nil), "/d/f"); got != want {
		t.Fatalf("after truncate, write past the cut and sync: %q, want %q", got, want)
	}
	if got := content(t, m, "/d/f"); got != want {
		t.Fatalf("a reader sees %q, want %q", got, want)
	}
}
