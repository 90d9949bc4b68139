package procfs

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

func TestParseStat(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     Stat
		bad      bool
	}{
		{name: "plain", in: "42 (postgres) S 7 42 42 0 -1 4194560 1 0 0 0 150 30 5 2 20 0 1 0 100 0 0\n",
			want: Stat{Comm: "postgres", State: 'S', PPID: 7, UTime: 150, STime: 30, CUTime: 5, CSTime: 2}},
		{name: "name with parens and spaces", in: "9 (a) (b c)) R 1 9 9 0 -1 0 0 0 0 0 1 2 3 4 20 0 1 0",
			want: Stat{Comm: "a) (b c)", State: 'R', PPID: 1, UTime: 1, STime: 2, CUTime: 3, CSTime: 4}},
		{name: "stopped", in: "5 (redis-server) T 1 5 5 0 -1 0 0 0 0 0 1 2 3 4 20 0 1 0",
			want: Stat{Comm: "redis-server", State: 'T', PPID: 1, UTime: 1, STime: 2, CUTime: 3, CSTime: 4}},
		{name: "long state", in: "1 (x) SS 0 1 1 0 -1 0 0 0 0 0 1 2 3 4", bad: true},
		{name: "short", in: "1 (x) S 0 1 1", bad: true},
		{name: "no name", in: "1 x S 0 1 1 0 -1 0 0 0 0 0 1 2 3 4", bad: true},
		{name: "negative time", in: "1 (x) S 0 1 1 0 -1 0 0 0 0 0 -1 2 3 4", bad: true},
		{name: "empty", in: "", bad: true},
	} {
		got, err := ParseStat([]byte(tc.in))
		if tc.bad {
			if err == nil {
				t.Errorf("%s: parsed %+v, want an error", tc.name, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: got %+v, %v; want %+v", tc.name, got, err, tc.want)
		}
	}
}

func FuzzParseStat(f *testing.F) {
	if data, err := os.ReadFile("/proc/self/stat"); err == nil {
		f.Add(data)
	}
	f.Add([]byte("9 (a) (b c)) R 1 9 9 0 -1 0 0 0 0 0 1 2 3 4 20 0 1 0"))
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := ParseStat(data)
		if err == nil && (st.PPID < 0 || st.UTime < 0 || st.STime < 0 || st.CUTime < 0 || st.CSTime < 0) {
			t.Fatalf("accepted %q as %+v", data, st)
		}
	})
}

func TestFieldKB(t *testing.T) {
	data := []byte("Name:\tx\nVmRSS:\t  1234 kB\nVmHWM:\t 99 kB\n")
	if v, ok := FieldKB(data, "VmRSS:"); !ok || v != 1234 {
		t.Errorf("VmRSS = %d, %v", v, ok)
	}
	if _, ok := FieldKB(data, "Pss:"); ok {
		t.Error("found a field that is not there")
	}
}

// TestTreeCPUCountsDescendants starts a shell whose two children burn CPU
// while it waits: the tree's CPU grows, the shell's own barely does. The
// second figure is the broken variant a meter reading only the root pid
// would report.
func TestTreeCPUCountsDescendants(t *testing.T) {
	cmd := exec.Command("sh", "-c", "yes >/dev/null & yes >/dev/null & wait")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		tree, _ := FS("/proc").Tree(cmd.Process.Pid)
		for _, p := range tree[1:] {
			if pr, err := os.FindProcess(p); err == nil {
				pr.Kill()
			}
		}
		cmd.Process.Kill()
		cmd.Wait()
	}()
	fs := FS("/proc")
	pid := cmd.Process.Pid
	var tree []int
	for deadline := time.Now().Add(5 * time.Second); len(tree) < 3 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		tree, _ = fs.Tree(pid)
	}
	if len(tree) < 3 {
		t.Fatalf("tree of the shell: %v, want the shell and two children", tree)
	}
	rootStart, _ := fs.Stat(pid)
	start := fs.TreeCPUTicks(tree)
	// Wait until the children have had 10 ticks of CPU, read from their
	// own stat files (a busy machine may give them little of each
	// second), for at most 20 s: the tree must count at least those.
	childTicks := func() int64 {
		var n int64
		for _, c := range tree[1:] {
			if st, err := fs.Stat(c); err == nil {
				n += st.CPUTicks()
			}
		}
		return n
	}
	childStart := childTicks()
	for deadline := time.Now().Add(20 * time.Second); childTicks()-childStart < 10 && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
	}
	tree, _ = fs.Tree(pid)
	treeTicks := fs.TreeCPUTicks(tree) - start
	rootEnd, _ := fs.Stat(pid)
	rootTicks := rootEnd.CPUTicks() - rootStart.CPUTicks()
	if treeTicks < 10 {
		t.Errorf("tree CPU: %d ticks after the children had 10, want at least 10", treeTicks)
	}
	if rootTicks*5 > treeTicks {
		t.Errorf("root alone %d ticks vs tree %d: the children's time is not what the tree adds", rootTicks, treeTicks)
	}
	if rss := fs.RSS(pid); rss <= 0 {
		t.Errorf("RSS of the shell: %d", rss)
	}
	t.Logf("tree %d ticks, root alone %d ticks", treeTicks, rootTicks)
}

func TestTreeOfFakeProc(t *testing.T) {
	dir := t.TempDir()
	write := func(pid, ppid, utime int) {
		p := filepath.Join(dir, strconv.Itoa(pid))
		os.MkdirAll(p, 0o755)
		line := strconv.Itoa(pid) + " (p) S " + strconv.Itoa(ppid) + " 0 0 0 -1 0 0 0 0 0 " + strconv.Itoa(utime) + " 0 0 0 20 0 1 0\n"
		os.WriteFile(filepath.Join(p, "stat"), []byte(line), 0o644)
	}
	write(10, 1, 5)
	write(11, 10, 7)
	write(12, 11, 1)
	write(13, 1, 100) // not in the tree
	fs := FS(dir)
	tree, err := fs.Tree(10)
	if err != nil || len(tree) != 3 {
		t.Fatalf("tree %v, %v", tree, err)
	}
	if got := fs.TreeCPUTicks(tree); got != 13 {
		t.Errorf("tree ticks %d, want 13", got)
	}
	if _, err := fs.Tree(99); err == nil {
		t.Error("a missing pid has a tree")
	}
}

func TestCheckServer(t *testing.T) {
	self, _ := FS("/proc").Stat(os.Getpid())
	if err := CheckServer(os.Getpid(), self.Comm[:1]); err != nil {
		t.Error(err)
	}
	if err := CheckServer(os.Getpid(), "no-such-server"); err == nil {
		t.Error("accepted a process of another name")
	}
}

func TestListenerPID(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	pid, err := FS("/proc").ListenerPID(port)
	if err != nil || pid != os.Getpid() {
		t.Errorf("ListenerPID(%d) = %d, %v; want this process %d", port, pid, err, os.Getpid())
	}
	ln.Close()
	if pid, err := FS("/proc").ListenerPID(port); err == nil {
		t.Errorf("a closed listener still belongs to %d", pid)
	}
}

func TestListeningInodes(t *testing.T) {
	table := []byte(`  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:3930 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4242 1 0000000000000000 100 0 0 10 0
   1: 0100007F:3930 0100007F:D3C2 01 00000000:00000000 00:00000000 00000000     0        0 5151 1 0000000000000000 20 4 30 10 -1
   2: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 6161 1 0000000000000000 100 0 0 10 0
`)
	if got := ListeningInodes(table, 0x3930); len(got) != 1 || got[0] != "4242" {
		t.Errorf("inodes on 14640: %v, want [4242] (the established one is no listener)", got)
	}
	if got := ListeningInodes([]byte("garbage\n1 2 3"), 1); len(got) != 0 {
		t.Errorf("garbage gave %v", got)
	}
}

func FuzzListeningInodes(f *testing.F) {
	if data, err := os.ReadFile("/proc/net/tcp"); err == nil {
		f.Add(data, 22)
	}
	f.Fuzz(func(t *testing.T, data []byte, port int) {
		for _, ino := range ListeningInodes(data, port) {
			if ino == "" {
				t.Fatal("an empty inode")
			}
		}
	})
}
