package vfs_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"allot/vfs"
)

// TestWriteFileAtomicRefusesWhatIsNotARegularFile: a checkpoint or state
// file named after a device (--state /dev/null) was replaced by a
// regular file, run as root: /dev/null itself, for every program on the
// machine. A FIFO and a symbolic link stand for the device here.
func TestWriteFileAtomicRefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(filepath.Join(dir, "target"), link); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{fifo, link} {
		if err := vfs.WriteFileAtomic(vfs.OS{}, name, []byte("1\n")); err == nil {
			t.Errorf("%s: replaced", name)
		}
		st, err := os.Lstat(name)
		if err != nil || st.Mode().IsRegular() {
			t.Errorf("%s after the refusal: %v, %v", name, st.Mode(), err)
		}
		if _, err := os.Lstat(name + ".tmp"); err == nil {
			t.Errorf("%s: a temporary file was left", name)
		}
	}
	regular := filepath.Join(dir, "regular")
	if err := vfs.WriteFileAtomic(vfs.OS{}, regular, []byte("1\n")); err != nil {
		t.Fatal(err)
	}
	if err := vfs.WriteFileAtomic(vfs.OS{}, regular, []byte("2\n")); err != nil {
		t.Fatalf("replacing a regular file: %v", err)
	}
	if b, _ := os.ReadFile(regular); string(b) != "2\n" {
		t.Fatalf("regular file holds %q", b)
	}
}
