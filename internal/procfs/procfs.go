// Package procfs reads what the bench needs of Linux's /proc: a process's
// parent, CPU times and resident memory, and the tree of its descendants.
// It only reads; a process that vanishes between two reads is skipped, not
// an error, because servers fork and reap backends all the time.
package procfs

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ClockTicks is USER_HZ, the unit of the times in /proc/<pid>/stat: 100 on
// every Linux architecture (part of the kernel's user ABI, independent of
// CONFIG_HZ).
const ClockTicks = 100

// Stat is what the bench reads of /proc/<pid>/stat.
type Stat struct {
	Comm string
	// State is the process state letter: R running, S sleeping, T stopped
	// by a signal (SIGSTOP), Z zombie, and so on (proc(5)).
	State byte
	PPID  int
	// Times in clock ticks: own user and system time, and that of
	// children that exited and were reaped.
	UTime, STime, CUTime, CSTime int64
}

// CPUTicks is own and reaped children's user and system time.
func (s Stat) CPUTicks() int64 { return s.UTime + s.STime + s.CUTime + s.CSTime }

// ParseStat parses the contents of /proc/<pid>/stat. The command name
// (field 2) is in parentheses and may itself hold spaces and parentheses,
// so fields are counted from the last ')'.
func ParseStat(data []byte) (Stat, error) {
	open := bytes.IndexByte(data, '(')
	end := bytes.LastIndexByte(data, ')')
	if open < 0 || end < open {
		return Stat{}, errors.New("procfs: stat: no (command name)")
	}
	f := bytes.Fields(data[end+1:])
	// After the name: state(3) ppid(4) ... utime(14) stime(15) cutime(16) cstime(17).
	if len(f) < 15 {
		return Stat{}, fmt.Errorf("procfs: stat: %d fields after the name, want at least 15", len(f))
	}
	if len(f[0]) != 1 {
		return Stat{}, fmt.Errorf("procfs: stat: state %q", f[0])
	}
	st := Stat{Comm: string(data[open+1 : end]), State: f[0][0]}
	ppid, err := strconv.Atoi(string(f[1]))
	if err != nil || ppid < 0 {
		return Stat{}, fmt.Errorf("procfs: stat: ppid %q", f[1])
	}
	st.PPID = ppid
	for i, dst := range []*int64{&st.UTime, &st.STime, &st.CUTime, &st.CSTime} {
		v, err := strconv.ParseInt(string(f[11+i]), 10, 64)
		if err != nil || v < 0 {
			return Stat{}, fmt.Errorf("procfs: stat: field %d %q", 14+i, f[11+i])
		}
		*dst = v
	}
	return st, nil
}

// FS is a /proc directory ("/proc", or a copy in tests).
type FS string

// Stat reads /proc/<pid>/stat.
func (fs FS) Stat(pid int) (Stat, error) {
	data, err := os.ReadFile(filepath.Join(string(fs), strconv.Itoa(pid), "stat"))
	if err != nil {
		return Stat{}, err
	}
	return ParseStat(data)
}

// Tree returns pid and all its descendants, pid first.
func (fs FS) Tree(pid int) ([]int, error) {
	if _, err := fs.Stat(pid); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(string(fs))
	if err != nil {
		return nil, err
	}
	children := map[int][]int{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil || p == pid {
			continue
		}
		st, err := fs.Stat(p)
		if err != nil {
			continue // gone meanwhile
		}
		children[st.PPID] = append(children[st.PPID], p)
	}
	tree := []int{pid}
	for i := 0; i < len(tree); i++ {
		tree = append(tree, children[tree[i]]...)
	}
	return tree, nil
}

// TreeCPUTicks sums CPUTicks over the tree. A process that exits between
// two readings moves its time into its parent's cutime/cstime when reaped,
// so the sum does not drop.
func (fs FS) TreeCPUTicks(tree []int) int64 {
	var sum int64
	for _, p := range tree {
		if st, err := fs.Stat(p); err == nil {
			sum += st.CPUTicks()
		}
	}
	return sum
}

// RSS returns a process's proportional set size (Pss, from smaps_rollup:
// a page shared by k processes counts 1/k in each), or its VmRSS where
// smaps_rollup cannot be read, in bytes; 0 if neither can be read.
func (fs FS) RSS(pid int) int64 {
	dir := filepath.Join(string(fs), strconv.Itoa(pid))
	if data, err := os.ReadFile(filepath.Join(dir, "smaps_rollup")); err == nil {
		if kb, ok := FieldKB(data, "Pss:"); ok {
			return kb << 10
		}
	}
	if data, err := os.ReadFile(filepath.Join(dir, "status")); err == nil {
		if kb, ok := FieldKB(data, "VmRSS:"); ok {
			return kb << 10
		}
	}
	return 0
}

// FieldKB finds the line "key   123 kB" in a /proc file and returns 123.
func FieldKB(data []byte, key string) (int64, bool) {
	for line := range bytes.Lines(data) {
		if !bytes.HasPrefix(line, []byte(key)) {
			continue
		}
		f := bytes.Fields(line[len(key):])
		if len(f) == 0 {
			return 0, false
		}
		v, err := strconv.ParseInt(string(f[0]), 10, 64)
		if err != nil || v < 0 || v > 1<<50 {
			return 0, false
		}
		return v, true
	}
	return 0, false
}

// CheckServer checks that pid is a live process on this machine whose
// command name starts with one of names: an adapter's guard against
// reporting the figures of some other process (a server on another host
// whose pid happens to exist here).
func CheckServer(pid int, names ...string) error {
	st, err := FS("/proc").Stat(pid)
	if err != nil {
		return fmt.Errorf("procfs: server pid %d is not a process on this machine: %w", pid, err)
	}
	for _, n := range names {
		if strings.HasPrefix(st.Comm, n) {
			return nil
		}
	}
	return fmt.Errorf("procfs: pid %d is %q, not %s", pid, st.Comm, strings.Join(names, " or "))
}
