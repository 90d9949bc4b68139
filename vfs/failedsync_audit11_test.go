package vfs

import (
	"bytes"
	"errors"
	"testing"
)

// An fdatasync that fails (EIO) on Linux leaves the pages it could not
// write marked clean: a reader still gets the bytes from the page cache,
// but they are not durable, and a later fdatasync does not write them
// (nothing marks them dirty again). Faulty's failed Sync left them dirty,
// so the next Sync made them durable: a failed sync was retryable.
func TestFaultyFailedSyncLeavesBytesCleanButNotDurable(t *testing.T) {
	m := NewMem()
	m.MkdirAll("/d")
	fs := NewFaulty(m)
	f, _ := fs.Create("/d/f")
	m.SyncDir("/d")
	write(t, f, "synced.")
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	write(t, f, "lost")
	fs.FailSyncs(true)
	if err := f.Sync(); !errors.Is(err, ErrInjected) {
		t.Fatalf("sync: %v, want the injected failure", err)
	}
	fs.FailSyncs(false)
	if got := content(t, m, "/d/f"); got != "synced.lost" {
		t.Fatalf("after the failed sync a reader gets %q, want the page cache's bytes", got)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	// The size was written by the later sync; the bytes never were.
	want := "synced.\x00\x00\x00\x00"
	if got := content(t, m.Crash(nil), "/d/f"); got != want {
		t.Fatalf("a power cut after a failed sync and a good one left %q, want %q", got, want)
	}
	if got := content(t, m.CrashPages(func(string, int64) int { return PageBytes }), "/d/f"); got != want {
		t.Fatalf("the failed sync's pages were still dirty: a writeback of every dirty page left %q", got)
	}
	// Written again, they are dirty again, and a sync writes them.
	f.WriteAt([]byte("lost"), 7)
	f.Sync()
	if got := content(t, m.Crash(nil), "/d/f"); got != "synced.lost" {
		t.Fatalf("rewritten and synced: %q", got)
	}
}

// The same through a mapping: a page written through it and then caught
// by a failed sync is clean. Mem found the pages written through a
// mapping by comparing them with their durable copy, which would take such
// a page for a dirty one again at the next look.
func TestMemFailedSyncOfAMappedPage(t *testing.T) {
	m := NewMem()
	m.EnableMapping()
	m.MkdirAll("/d")
	f, _ := m.Create("/d/f")
	m.SyncDir("/d")
	f.WriteAt(make([]byte, 2*PageBytes), 0)
	f.Sync()
	b, err := f.(Mapper).Map(2 * PageBytes)
	if err != nil {
		t.Fatal(err)
	}
	copy(b[PageBytes:], "mapped")
	f.(SyncFailer).FailSync()
	if err := f.(Mapper).Unmap(b); err != nil {
		t.Fatal(err)
	}
	f.Sync()
	if got := content(t, m, "/d/f"); got[PageBytes:PageBytes+6] != "mapped" {
		t.Fatal("a reader lost the mapped write")
	}
	if got := content(t, m.CrashPages(func(string, int64) int { return PageBytes }), "/d/f"); got != string(make([]byte, 2*PageBytes)) {
		t.Fatal("a mapped write caught by a failed sync reached the disk")
	}
}

// CrashProcess is a crash of the process, not of the machine: the next
// process reads every byte written and every entry made, and none of what
// was unsynced became durable, so a later power cut loses it.
func TestMemCrashProcessKeepsThePageCacheUnsynced(t *testing.T) {
	m := NewMem()
	m.MkdirAll("/d")
	f, _ := m.Create("/d/f")
	m.SyncDir("/d")
	write(t, f, "synced.")
	f.Sync()
	write(t, f, "unsynced")
	g, _ := m.Create("/d/g") // never in a synced directory
	write(t, g, "g")
	g.Sync()

	p := m.CrashProcess()
	if got := content(t, p, "/d/f"); got != "synced.unsynced" {
		t.Fatalf("after a process crash: %q", got)
	}
	if got := content(t, p, "/d/g"); got != "g" {
		t.Fatalf("after a process crash /d/g holds %q", got)
	}
	// The dead process's writes do not reach the next one's files.
	write(t, f, "late")
	if got := content(t, p, "/d/f"); got != "synced.unsynced" {
		t.Fatalf("a write of the old process reached the new one's file system: %q", got)
	}
	cut := p.Crash(nil)
	if got := content(t, cut, "/d/f"); got != "synced." {
		t.Fatalf("a power cut after a process crash left %q, want the synced bytes only", got)
	}
	absent(t, cut, "/d/g")

	// What the next process syncs is durable.
	f2, _ := p.OpenAppend("/d/f")
	f2.Sync()
	p.SyncDir("/d")
	cut = p.Crash(nil)
	if got := content(t, cut, "/d/f"); got != "synced.unsynced" || !bytes.Equal([]byte(content(t, cut, "/d/g")), []byte("g")) {
		t.Fatalf("synced by the next process, then a power cut: f %q", got)
	}
}
