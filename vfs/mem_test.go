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
	m.SyncDir("/d") // durable name: the test is about the bytes
	write(t, f, "synced.")
	f.Sync()
	write(t, f, "unsynced")
	for _, tc := range []struct {
		keep func(string, int) int
		want string
	}{
		{nil, "synced."}, // power loss
		{func(string, int) int { return 3 }, "synced.uns"},          // torn
		{func(_ string, n int) int { return n }, "synced.unsynced"}, // all written back
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
	m.SyncDir("/d")               // durable name: the test is about the bytes
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

// HoldSyncs holds the syncs of the files it names until released, and
// then returns the error given; other files sync as usual.
func TestFaultyHoldsSyncs(t *testing.T) {
	fs := NewFaulty(NewMem())
	fs.MkdirAll("/d")
	held, release := fs.HoldSyncs("journal-")
	other, _ := fs.Create("/d/other")
	if err := other.Sync(); err != nil {
		t.Fatalf("a file the hold does not name: %v", err)
	}
	f, _ := fs.Create("/d/journal-1")
	done := make(chan error, 1)
	go func() { done <- f.Sync() }()
	if name := <-held; name != "/d/journal-1" {
		t.Fatalf("held %s", name)
	}
	select {
	case err := <-done:
		t.Fatalf("the held sync returned before its release: %v", err)
	default:
	}
	release(ErrInjected)
	if err := <-done; !errors.Is(err, ErrInjected) {
		t.Fatalf("the released sync returned %v, want the error given", err)
	}
	if err := f.Sync(); err != nil {
		t.Fatalf("a sync after the release: %v", err)
	}
}

// A power cut writes back any subset of the dirty pages: here the last
// page reached the disk, the first was torn after 100 bytes and the middle
// one was lost, though it was written before the last.
func TestMemCrashPagesKeepsAnArbitrarySubset(t *testing.T) {
	m := NewMem()
	m.MkdirAll("/d")
	f, _ := m.Create("/d/f")
	m.SyncDir("/d") // durable name: the test is about the bytes
	f.WriteAt(make([]byte, 3*PageBytes), 0)
	f.Sync()
	page := func(c byte) []byte { return bytes.Repeat([]byte{c}, PageBytes) }
	for p, c := range []byte{'a', 'b', 'c'} {
		f.WriteAt(page(c), int64(p*PageBytes))
	}
	crashed := m.CrashPages(func(name string, p int64) int {
		if name != "/d/f" {
			t.Errorf("asked about %s", name)
		}
		return []int{100, 0, PageBytes}[p]
	})
	got := []byte(content(t, crashed, "/d/f"))
	want := make([]byte, 3*PageBytes)
	copy(want, page('a')[:100])
	copy(want[2*PageBytes:], page('c'))
	if !bytes.Equal(got, want) {
		t.Fatalf("after the crash: %q...%q (%d bytes)", got[:8], got[len(got)-8:], len(got))
	}
	// Synced pages are never asked about, and survive.
	f.Sync()
	asked := 0
	crashed = m.CrashPages(func(string, int64) int { asked++; return 0 })
	if asked != 0 || content(t, crashed, "/d/f") != string(page('a'))+string(page('b'))+string(page('c')) {
		t.Fatalf("after a sync: asked about %d pages, or the synced bytes changed", asked)
	}
	// An append past the durable end lost in the crash leaves the file at
	// its durable length.
	f.WriteAt(page('d'), 3*PageBytes)
	if got := content(t, m.CrashPages(func(string, int64) int { return 0 }), "/d/f"); len(got) != 3*PageBytes {
		t.Fatalf("a lost append left %d bytes", len(got))
	}
}

// Writes through a mapping are the file's bytes at once and unsynced page
// cache until Sync, also after Unmap.
func TestMemMappingIsUnsyncedPageCache(t *testing.T) {
	m := NewMem()
	m.MkdirAll("/d")
	f, _ := m.Create("/d/f")
	m.SyncDir("/d") // durable name: the test is about the bytes
	if _, err := f.(Mapper).Map(PageBytes); !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("map with mapping off: %v", err)
	}
	m.EnableMapping()
	f.WriteAt(make([]byte, 2*PageBytes), 0)
	f.Sync()
	if _, err := f.(Mapper).Map(3 * PageBytes); err == nil {
		t.Fatal("mapped past the end of the file")
	}
	b, err := f.(Mapper).Map(2 * PageBytes)
	if err != nil {
		t.Fatal(err)
	}
	copy(b[PageBytes+10:], "mapped")
	if got := content(t, m, "/d/f"); got[PageBytes+10:PageBytes+16] != "mapped" {
		t.Fatal("a read does not see a write through the mapping")
	}
	var dirty []int64
	lost := m.CrashPages(func(_ string, p int64) int { dirty = append(dirty, p); return 0 })
	if len(dirty) != 1 || dirty[0] != 1 {
		t.Fatalf("dirty pages %v, want [1]", dirty)
	}
	if content(t, lost, "/d/f") != string(make([]byte, 2*PageBytes)) {
		t.Fatal("an unsynced mapped write survived a power cut that lost its page")
	}
	if err := f.(Mapper).Unmap(b); err != nil {
		t.Fatal(err)
	}
	if got := content(t, m.CrashPages(func(string, int64) int { return PageBytes }), "/d/f"); got[PageBytes+10:PageBytes+16] != "mapped" {
		t.Fatal("a mapped write, unmapped, did not survive a crash that kept its page")
	}
	if got := content(t, m.CrashPages(func(string, int64) int { return 0 }), "/d/f"); got != string(make([]byte, 2*PageBytes)) {
		t.Fatal("unmapping synced the mapped write")
	}
	f.Sync()
	if got := content(t, m.CrashPages(func(string, int64) int { return 0 }), "/d/f"); got[PageBytes+10:PageBytes+16] != "mapped" {
		t.Fatal("a synced mapped write was lost")
	}
}
