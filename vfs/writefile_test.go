package vfs_test

import (
	"testing"

	"allot/vfs"
)

// WriteFileAtomic replaces a file's contents; when a step fails, the old
// contents stay and no temporary file is left behind.
func TestWriteFileAtomic(t *testing.T) {
	for _, fail := range []string{"", "sync", "write"} {
		t.Run("fail "+fail, func(t *testing.T) {
			mem := vfs.NewMem()
			if err := mem.MkdirAll("/d"); err != nil {
				t.Fatal(err)
			}
			if err := vfs.WriteFileAtomic(mem, "/d/f", []byte("old")); err != nil {
				t.Fatal(err)
			}
			fs := vfs.NewFaulty(mem)
			switch fail {
			case "sync":
				fs.FailSyncs(true)
			case "write":
				fs.FailWritesAfter(1)
			}
			err := vfs.WriteFileAtomic(fs, "/d/f", []byte("new contents"))
			if (err != nil) != (fail != "") {
				t.Fatalf("error %v", err)
			}
			want := "new contents"
			if fail != "" {
				want = "old"
			}
			if b, err := vfs.ReadFile(mem, "/d/f"); err != nil || string(b) != want {
				t.Fatalf("the file holds %q (%v), want %q", b, err, want)
			}
			if names, _ := mem.List("/d"); len(names) != 1 {
				t.Fatalf("the directory holds %v", names)
			}
		})
	}
}
