package fsinfo

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Magic numbers statfs(2) reports for file systems that keep every byte in
// memory (linux/magic.h).
const (
	tmpfsMagic = 0x01021994
	ramfsMagic = 0x858458f6
)

// memoryTypes are the mountinfo type names of file systems in memory, for
// when statfs is not available (a fake mountinfo in tests).
var memoryTypes = map[string]bool{"tmpfs": true, "ramfs": true, "devtmpfs": true}

// Info describes the file system holding one directory.
type Info struct {
	// Path is the directory asked about, made absolute.
	Path string `json:"path"`
	// Type is the file system type as the kernel names it in
	// /proc/self/mountinfo ("ext4", "xfs", "tmpfs", "overlay").
	Type string `json:"fs_type"`
	// Source is the mounted device or name ("/dev/vda1", "tmpfs").
	Source string `json:"source,omitempty"`
	// MountPoint is where that file system is mounted.
	MountPoint string `json:"mount_point"`
	// Options are the mount's options followed by the file system's own
	// (for example "rw,relatime,discard"): what decides whether an fsync
	// reaches the platter (barrier=0, nobarrier, data=writeback).
	Options string `json:"mount_options"`
	// Memory is true on tmpfs and ramfs, where fsync proves nothing.
	Memory bool `json:"memory"`
}

// String is a short line for logs and tables: "ext4 (rw,relatime) on /".
func (i Info) String() string {
	if i.Type == "" {
		return "unknown file system"
	}
	return fmt.Sprintf("%s (%s) on %s", i.Type, i.Options, i.MountPoint)
}

// Describe returns the file system of path (or, when path does not exist
// yet, of the nearest folder above it that does).
func Describe(path string) (Info, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return Info{}, fmt.Errorf("fsinfo: %q: %w", path, err)
	}
	existing, err := nearestExisting(abs)
	if err != nil {
		return Info{}, err
	}
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return Info{Path: abs}, fmt.Errorf("fsinfo: %w", err)
	}
	info := describe(abs, existing, mi)
	var st syscall.Statfs_t
	if err := syscall.Statfs(existing, &st); err == nil {
		info.Memory = info.Memory || uint32(st.Type) == tmpfsMagic || uint32(st.Type) == ramfsMagic
	}
	return info, nil
}

// nearestExisting resolves symbolic links in the longest existing prefix
// of abs, so that the mount found is the one the data really lands on.
func nearestExisting(abs string) (string, error) {
	for d := abs; ; d = filepath.Dir(d) {
		real, err := filepath.EvalSymlinks(d)
		if err == nil {
			return real, nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("fsinfo: %s: %w", d, err)
		}
		if d == filepath.Dir(d) {
			return "", fmt.Errorf("fsinfo: no existing folder above %s", abs)
		}
	}
}

// describe finds, in a mountinfo file, the mount whose point is the longest
// prefix of dir; a later line wins over an earlier one at the same point
// (it is mounted over it).
func describe(abs, dir string, mountinfo []byte) Info {
	info := Info{Path: abs}
	best := -1
	sc := bufio.NewScanner(bytes.NewReader(mountinfo))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		m, ok := parseMountinfoLine(sc.Text())
		if !ok || !within(dir, m.MountPoint) || len(m.MountPoint) < best {
			continue
		}
		best = len(m.MountPoint)
		m.Path = abs
		info = m
	}
	return info
}

// within reports whether dir is mount or below it.
func within(dir, mount string) bool {
	return mount == "/" || dir == mount || strings.HasPrefix(dir, mount+"/")
}

// parseMountinfoLine reads one line of /proc/self/mountinfo:
//
//	36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
//
// fields: id, parent, major:minor, root, mount point, mount options,
// optional fields up to "-", then type, source, super options.
//
// Fields are split at each ' ', as the kernel writes them: it escapes
// space, tab, newline and backslash in a path but nothing else, so a path
// may hold \v, \r or a Unicode space (U+3000 in a volume label), where
// strings.Fields would cut it; and a mount with an empty source (mount -t
// tmpfs "" /mnt) has an empty field there ("- tmpfs  rw"), which
// strings.Fields would drop, shifting the fields after it.
func parseMountinfoLine(line string) (Info, bool) {
	f := strings.Split(line, " ")
	if len(f) < 10 {
		return Info{}, false
	}
	sep := -1
	for i := 6; i < len(f); i++ {
		if f[i] == "-" {
			sep = i
			break
		}
	}
	if sep < 0 || sep+2 >= len(f) {
		return Info{}, false
	}
	opts := f[5]
	if sep+3 < len(f) {
		opts = mergeOptions(f[5], f[sep+3])
	}
	m := Info{
		MountPoint: unescape(f[4]),
		Type:       f[sep+1],
		Source:     unescape(f[sep+2]),
		Options:    opts,
	}
	m.Memory = memoryTypes[m.Type]
	return m, true
}

// mergeOptions joins the per-mount options and the super block's options,
// dropping repeats (both usually say "rw").
func mergeOptions(mount, super string) string {
	seen := map[string]bool{}
	var out []string
	for _, o := range append(strings.Split(mount, ","), strings.Split(super, ",")...) {
		if o != "" && !seen[o] {
			seen[o] = true
			out = append(out, o)
		}
	}
	return strings.Join(out, ",")
}

// unescape undoes mountinfo's octal escapes (\040 for a space, \011, \012,
// \134).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && isOctal(s[i+1:i+4]) {
			b.WriteByte((s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0'))
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isOctal(s string) bool {
	if len(s) != 3 {
		return false
	}
	for i := 0; i < 3; i++ {
		if s[i] < '0' || s[i] > '7' {
			return false
		}
	}
	return true
}
