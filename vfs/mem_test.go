package vfs

import (
	"bytes"
	"errors"
	"os"
	"testing"
)

func write(t *testing.T, f File, s string) {
	t.Helper()
	if _, err := f.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
}

func content(t *testing.T, fs FS, name string) string {
	t.Helper()
	b, err := ReadFile(fs, name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestMemCrashKeepsWhatWasSynced(t *testing.T) {
	m := NewMem()
	m.MkdirAll("/d")
	f, _ := m.Create("/d/f")
	write(t, f, "synced.")
	f.Sync()
	write(t, f, "unsynced")
	for _, tc := range []struct {
		keep func(string, int) int
		want string
	}{
		{nil, "synced."}, // power loss
		{func(string, int) int { return 3 }, "synced.uns"},          // torn
		{func(_ string, n int) int { return n }, "synced.unsynced"}, // process crash
		{func(string, int) int { return 99 }, "synced.unsynced"},
	} {
		if got := content(t, m.Crash(tc.keep), "/d/f"); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
}

func TestMemOverwriteOfSyncedBytesIsNotDurableUntilSync(t *testing.T) {
	m := NewMem()
	m.MkdirAll("/d")
	f, _ := m.Create("/d/f")
	f.WriteAt(make([]byte, 8), 0) // preallocated zeros
	f.Sync()
	f.WriteAt([]byte("ab"), 2)
	if got := content(t, m.Crash(nil), "/d/f"); got != string(make([]byte, 8)) {
		t.Fatalf("an unsynced overwrite survived power loss: %q", got)
	}
	if got := content(t, m.Crash(func(string, int) int { return 1 }), "/d/f"); got != "\x00\x00a\x00\x00\x00\x00\x00" {
		t.Fatalf("torn overwrite: %q", got)
	}
	f.Sync()
	if got := content(t, m.Crash(nil), "/d/f"); got != "\x00\x00ab\x00\x00\x00\x00" {
		t.Fatalf("a synced overwrite was lost: %q", got)
	}
}

func TestMemFilesAndDirs(t *testing.T) {
	m := NewMem()
	if _, err := m.Create("/nodir/f"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("create in a missing dir: %v", err)
	}
	m.MkdirAll("/a/b")
	f, _ := m.Create("/a/b/x")
	write(t, f, "1")
	if err := m.Rename("/a/b/x", "/a/b/y"); err != nil {
		t.Fatal(err)
	}
	names, _ := m.List("/a/b")
	if len(names) != 1 || names[0] != "y" {
		t.Fatalf("list: %v", names)
	}
	if err := m.Remove("/a/b/x"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("remove of a renamed file: %v", err)
	}
	if err := m.Corrupt("/a/b/y", 0); err != nil || content(t, m, "/a/b/y") == "1" {
		t.Fatalf("corrupt: %v", err)
	}
	l, err := m.Lock("/a/LOCK")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Lock("/a/LOCK"); err == nil {
		t.Fatal("a second lock was granted")
	}
	l.Close()
	if _, err := m.Lock("/a/LOCK"); err != nil {
		t.Fatalf("lock after release: %v", err)
	}
}

func TestFaultyTearsWritesAndFailsSyncs(t *testing.T) {
	m := NewMem()
	m.MkdirAll("/d")
	fs := NewFaulty(m)
	f, _ := fs.Create("/d/f")
	fs.FailWritesAfter(4)
	n, err := f.Write([]byte("abcdef"))
	if n != 4 || !errors.Is(err, ErrInjected) {
		t.Fatalf("torn write: n=%d err=%v", n, err)
	}
	if got := content(t, m, "/d/f"); got != "abcd" {
		t.Fatalf("torn write left %q", got)
	}
	fs.FailSyncs(true)
	if err := f.Sync(); !errors.Is(err, ErrInjected) {
		t.Fatalf("sync: %v", err)
	}
}

func TestOSLockIsExclusive(t *testing.T) {
	name := t.TempDir() + "/LOCK"
	l, err := OS{}.Lock(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := (OS{}).Lock(name); err == nil {
		t.Fatal("a second flock on one file was granted")
	}
	l.Close()
	l2, err := OS{}.Lock(name)
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	l2.Close()
}

func TestOSWriteAtAndSync(t *testing.T) {
	dir := t.TempDir()
	fs := OS{}
	f, err := fs.Create(dir + "/f")
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt(make([]byte, 8), 0)
	f.WriteAt([]byte("xy"), 3)
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	got, _ := ReadFile(fs, dir+"/f")
	if !bytes.Equal(got, []byte("\x00\x00\x00xy\x00\x00\x00")) {
		t.Fatalf("got %q", got)
	}
	if err := fs.SyncDir(dir); err != nil {
		t.Fatal(err)
	}
}
