package vfs

import (
	"errors"
	"testing"
)

// FailWritesAfter(0) on a Faulty that has written nothing yet must fail the
// next write: the limit was kept as an absolute byte count where 0 meant
// "no limit", so a fault asked for before the first write was not injected.
func TestFaultyFailsTheFirstWrite(t *testing.T) {
	m := NewMem()
	m.MkdirAll("/d")
	fs := NewFaulty(m)
	f, err := fs.Create("/d/f")
	if err != nil {
		t.Fatal(err)
	}
	fs.FailWritesAfter(0)
	if n, err := f.Write([]byte("abc")); n != 0 || !errors.Is(err, ErrInjected) {
		t.Fatalf("a write after FailWritesAfter(0): n=%d err=%v, want 0 bytes and the injected error", n, err)
	}
}
