package fsinfo

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const mountinfo = `21 26 0:20 / /proc rw,relatime - proc proc rw
26 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard
24 23 0:22 / /dev/shm rw,relatime - tmpfs tmpfs rw,size=24683620k
40 26 0:41 / /data rw,noatime shared:5 - xfs /dev/sdb1 rw,attr2,nobarrier
41 40 0:42 / /data/fast rw - tmpfs tmpfs rw,size=1g
42 26 0:43 / /mnt/with\040space rw - ext4 /dev/sdc rw
43 26 0:44 / /data2 rw - ext4 /dev/sdd rw
`

func TestDescribeFindsLongestMount(t *testing.T) {
	tests := []struct {
		dir, typ, mount, opts string
		memory                bool
	}{
		{"/work/main/.allot/data", "ext4", "/", "rw,relatime,discard", false},
		{"/dev/shm/x", "tmpfs", "/dev/shm", "rw,relatime,size=24683620k", true},
		{"/data", "xfs", "/data", "rw,noatime,attr2,nobarrier", false},
		{"/data/fast/journal", "tmpfs", "/data/fast", "rw,size=1g", true},
		{"/data/fastish", "xfs", "/data", "rw,noatime,attr2,nobarrier", false},
		{"/data2/x", "ext4", "/data2", "rw", false},
		{"/mnt/with space/d", "ext4", "/mnt/with space", "rw", false},
	}
	for _, tt := range tests {
		got := describe(tt.dir, tt.dir, []byte(mountinfo))
		if got.Type != tt.typ || got.MountPoint != tt.mount || got.Options != tt.opts || got.Memory != tt.memory || got.Path != tt.dir {
			t.Errorf("%s: got %+v, want %s on %s (%s) memory %v", tt.dir, got, tt.typ, tt.mount, tt.opts, tt.memory)
		}
	}
}

func TestDescribeSkipsBadLines(t *testing.T) {
	got := describe("/x", "/x", []byte("garbage\n1 2 3 4 5 6 7 8 9 10 no separator\n26 1 254:0 / / rw - ext4 /dev/vda rw\n"))
	if got.Type != "ext4" {
		t.Fatalf("got %+v", got)
	}
	if got := describe("/x", "/x", nil); got.Type != "" || got.String() != "unknown file system" {
		t.Fatalf("empty mountinfo: got %+v", got)
	}
}

func TestDescribeRealPaths(t *testing.T) {
	dir := t.TempDir()
	info, err := Describe(filepath.Join(dir, "not", "yet"))
	if err != nil {
		t.Fatal(err)
	}
	if info.Type == "" || info.MountPoint == "" || !strings.HasSuffix(info.Path, "/not/yet") {
		t.Fatalf("got %+v", info)
	}
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		info, err := Describe("/dev/shm")
		if err != nil {
			t.Fatal(err)
		}
		if !info.Memory {
			t.Fatalf("/dev/shm not seen as memory: %+v", info)
		}
	}
}

func TestDataRootInCheckout(t *testing.T) {
	root, err := DataRoot()
	if err != nil {
		t.Fatal(err)
	}
	// The tests run in internal/fsinfo of the checkout.
	wd, _ := os.Getwd()
	want := filepath.Join(filepath.Dir(filepath.Dir(wd)), ".allot")
	if root != want {
		t.Fatalf("DataRoot = %s, want %s", root, want)
	}
}

func TestDataRootOutsideCheckout(t *testing.T) {
	outside := t.TempDir()
	t.Chdir(outside)
	t.Setenv("XDG_DATA_HOME", filepath.Join(outside, "xdg"))
	root, err := DataRoot()
	if err != nil {
		t.Fatal(err)
	}
	if root != filepath.Join(outside, "xdg", "allot") {
		t.Fatalf("DataRoot = %s", root)
	}
	t.Setenv("XDG_DATA_HOME", "relative/not/allowed")
	t.Setenv("HOME", filepath.Join(outside, "home"))
	if root, _ := DataRoot(); root != filepath.Join(outside, "home", ".local", "share", "allot") {
		t.Fatalf("DataRoot = %s", root)
	}
}

func TestUnescape(t *testing.T) {
	for in, want := range map[string]string{`a\040b`: "a b", `\134`: `\`, `x\04`: `x\04`, `plain`: "plain", `\999`: `\999`} {
		if got := unescape(in); got != want {
			t.Errorf("unescape(%q) = %q, want %q", in, got, want)
		}
	}
}
