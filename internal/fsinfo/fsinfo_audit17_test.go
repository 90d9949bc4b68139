package fsinfo

import (
	"fmt"
	"strings"
	"testing"
)

// escapeMountinfo escapes a path as the kernel writes it in
// /proc/self/mountinfo (show_mountinfo's mangle: space, tab, newline and
// backslash as three octal digits).
func escapeMountinfo(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case ' ', '\t', '\n', '\\':
			fmt.Fprintf(&b, `\%03o`, c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// FuzzMountinfoAudit17: any mountinfo text is parsed without a panic; the
// mount describe picks holds the directory; a line the kernel would write
// for any mount point and source parses back to them.
func FuzzMountinfoAudit17(f *testing.F) {
	f.Add([]byte(mountinfo), "/data/fast/x", "/mnt/a b", "/dev/sd\\x", "ext4", "rw,relatime")
	f.Add([]byte("garbage\n1 2 3 4 5 6 7 8 9 10\n"), "/", "/", "none", "tmpfs", "rw")
	f.Add([]byte("26 1 254:0 / / rw - ext4 /dev/vda rw\n27 26 0:1 / /x\\040y rw shared:1 master:2 - xfs src\n"), "/x y/z", "/\t\n", "", "overlay", "")
	f.Fuzz(func(t *testing.T, mi []byte, dir, mount, source, typ, opts string) {
		info := describe(dir, dir, mi)
		if info.Path != dir {
			t.Fatalf("describe(%q) Path = %q", dir, info.Path)
		}
		if info.Type != "" && !within(dir, info.MountPoint) {
			t.Fatalf("describe(%q) chose mount %q, which does not hold it", dir, info.MountPoint)
		}
		// A well-formed line round-trips.
		if mount == "" || typ == "" || strings.ContainsAny(typ+opts, " \t\n\\") || strings.HasPrefix(typ, "-") {
			return
		}
		if opts == "" {
			opts = "rw"
		}
		src := source
		if src == "" {
			src = "none"
		}
		line := "36 35 98:0 / " + escapeMountinfo(mount) + " " + opts + " master:1 - " + typ + " " + escapeMountinfo(src) + " " + opts
		m, ok := parseMountinfoLine(line)
		if !ok || m.MountPoint != mount || m.Source != src || m.Type != typ {
			t.Fatalf("line %q parsed to %+v (ok %v), want mount %q source %q type %q", line, m, ok, mount, src, typ)
		}
	})
}

// TestMountPointWithUnicodeSpaceAudit17: the kernel separates mountinfo's
// fields by ' ' and escapes only space, tab, newline and backslash in a
// mount point. The parser split lines with strings.Fields, which also
// splits at \v, \f, \r and Unicode spaces (U+00A0, U+3000 ideographic
// space, ...), so a mount point such as a volume label with one of them
// was cut short: its data directories were reported on the file system
// above it (here the root's ext4 for a tmpfs; Describe's statfs still
// caught Memory, but the type, source and mount options a bench result
// records were the wrong mount's).
func TestMountPointWithUnicodeSpaceAudit17(t *testing.T) {
	for _, space := range []string{"\u3000", "\u00a0", "\v", "\f", "\r", "\u2028"} {
		point := "/media/u/My" + space + "Disk"
		mi := "26 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n" +
			"50 26 0:50 / " + point + " rw,nosuid shared:9 - tmpfs label" + space + "x rw,size=1g\n"
		got := describe(point+"/data", point+"/data", []byte(mi))
		if got.Type != "tmpfs" || got.MountPoint != point || got.Source != "label"+space+"x" || got.Options != "rw,nosuid,size=1g" || !got.Memory {
			t.Errorf("mount point %q: got %+v, want tmpfs (rw,nosuid,size=1g) on it, memory", point, got)
		}
	}
}

// TestMountWithEmptySourceAudit17: a mount whose source is empty (mount -t
// tmpfs "" /mnt) is written with an empty field ("- tmpfs  rw,..."). The
// parser dropped empty fields, so the line had one field too few and was
// skipped: a data directory on that tmpfs was described as the root's
// ext4.
func TestMountWithEmptySourceAudit17(t *testing.T) {
	mi := "26 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n" +
		"60 26 0:60 / /scratch rw,nosuid - tmpfs  rw,size=2g\n"
	got := describe("/scratch/data", "/scratch/data", []byte(mi))
	if got.Type != "tmpfs" || got.MountPoint != "/scratch" || got.Source != "" || got.Options != "rw,nosuid,size=2g" || !got.Memory {
		t.Fatalf("got %+v, want tmpfs (rw,nosuid,size=2g) on /scratch with no source, memory", got)
	}
}
