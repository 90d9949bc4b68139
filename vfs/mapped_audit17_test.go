package vfs

import (
	"bytes"
	"testing"
)

// A write into a mapping of a Mem file goes through the file's
// WriteMapped (CopyMapped), under the file's lock: a crash taken on
// another goroutine while it writes (the simulator's, while the dead
// process's goroutines run on) finds each write whole or not at all, and
// reads the mapped bytes without a data race, where a plain copy into the
// mapping raced with the crash's reads (go test -race ./sim: the
// journal's spare preparation against CrashPages). A write through the
// mapping is unsynced page cache: a process crash keeps it, a power cut
// before Sync loses it. Fails under -race with a plain copy.
func TestAMappedWriteOnAnotherGoroutineIsWholeInACrash(t *testing.T) {
	m := NewMem()
	m.EnableMapping()
	if err := m.MkdirAll("/d"); err != nil {
		t.Fatal(err)
	}
	f, err := m.Create("/d/f")
	if err != nil {
		t.Fatal(err)
	}
	const size = 4 * PageBytes
	if err := f.(Allocator).Allocate(size); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := m.SyncDir("/d"); err != nil {
		t.Fatal(err)
	}
	b, err := f.(Mapper).Map(size)
	if err != nil {
		t.Fatal(err)
	}
	const writes = 200
	done := make(chan struct{})
	go func() {
		defer close(done)
		for v := 1; v <= writes; v++ {
			CopyMapped(f, b, PageBytes/2, bytes.Repeat([]byte{byte(v)}, 2*PageBytes))
		}
	}()
	// Each crash finds the written span holding one write's bytes, the
	// zeros before the first, or the last.
	check := func(c *Mem, what string) {
		t.Helper()
		got, err := ReadFile(c, "/d/f")
		if err != nil {
			t.Fatal(err)
		}
		span := got[PageBytes/2 : PageBytes/2+2*PageBytes]
		if !bytes.Equal(span, bytes.Repeat(span[:1], len(span))) {
			t.Fatalf("%s found a mapped write torn: bytes %d and %d of it differ", what, span[0], span[len(span)-1])
		}
	}
	for crashes := 0; ; crashes++ {
		finished := false
		select {
		case <-done:
			finished = true
		default:
		}
		check(m.CrashProcess(), "a process crash")
		check(m.CrashPages(func(string, int64) int { return PageBytes }), "a power cut keeping every page")
		if finished {
			break
		}
	}
	if got := content(t, m.CrashProcess(), "/d/f"); got[PageBytes/2] != writes {
		t.Fatalf("a process crash after the last mapped write found byte %d: want %d", got[PageBytes/2], writes)
	}
	if got := content(t, m.CrashPages(func(string, int64) int { return 0 }), "/d/f"); got[PageBytes/2] != 0 {
		t.Fatalf("a power cut that wrote back no page found the unsynced mapped write (byte %d)", got[PageBytes/2])
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if got := content(t, m.Crash(nil), "/d/f"); got[PageBytes/2] != writes {
		t.Fatalf("a power cut after Sync found byte %d of the mapped write: want %d", got[PageBytes/2], writes)
	}
}
