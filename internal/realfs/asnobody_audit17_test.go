package realfs

import (
	"os"
	"path/filepath"
	"testing"
)

// TestAsNobodyRestoresAncestorsAudit17: to let user nobody reach the
// child's data directory, asNobody adds o+x to every folder above it that
// lacks it. Those are the folders of the machine the tests run on (a
// TMPDIR under a 0700 home, say): it used to leave them changed for good.
// They must be as they were once the test is over.
func TestAsNobodyRestoresAncestorsAudit17(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("asNobody changes nothing unless run as root")
	}
	private := filepath.Join(t.TempDir(), "private")
	if err := os.Mkdir(private, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(private, 0o700); err != nil { // past the umask
		t.Fatal(err)
	}
	t.Run("inner", func(t *testing.T) {
		t.Setenv("TMPDIR", private)
		parent := t.TempDir()
		if rel, err := filepath.Rel(private, parent); err != nil || !filepath.IsLocal(rel) {
			t.Fatalf("t.TempDir() = %s is not under TMPDIR %s", parent, private)
		}
		asNobody(t, parent)
		if st, err := os.Stat(private); err != nil || st.Mode().Perm()&0o001 == 0 {
			t.Fatalf("asNobody left %s unreachable for nobody: %v %v", private, st.Mode(), err)
		}
	})
	st, err := os.Stat(private)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o700 {
		t.Fatalf("after the test %s has mode %v, want it back at 0700", private, st.Mode().Perm())
	}
}
