package sysinfo

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

func TestParseCPUInfo(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		model string
		cores int
	}{
		{"x86", "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD  EPYC 7B13\nflags\t: fpu\n\nprocessor\t: 1\nmodel name\t: AMD  EPYC 7B13\n", "AMD EPYC 7B13", 2},
		{"arm64 without model", "processor\t: 0\nBogoMIPS\t: 50.00\nCPU part\t: 0xd0c\n\nprocessor\t: 1\n", "", 2},
		{"old arm", "Processor\t: ARMv7 Processor rev 4 (v7l)\nprocessor\t: 0\nprocessor\t: 1\nprocessor\t: 2\nHardware\t: BCM2835\n", "ARMv7 Processor rev 4 (v7l)", 3},
		{"empty", "", "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			model, cores := parseCPUInfo([]byte(tt.in))
			if model != tt.model || cores != tt.cores {
				t.Errorf("parseCPUInfo = %q, %d; want %q, %d", model, cores, tt.model, tt.cores)
			}
		})
	}
}

func TestParseMemTotal(t *testing.T) {
	tests := []struct {
		in   string
		want int64
	}{
		{"MemTotal:       24684092 kB\nMemFree: 1 kB\n", 24684092 * 1024},
		{"MemFree: 1 kB\n", 0},
		{"MemTotal: lots kB\n", 0},
		{"MemTotal: -5 kB\n", 0},
	}
	for _, tt := range tests {
		if got := parseMemTotal([]byte(tt.in)); got != tt.want {
			t.Errorf("parseMemTotal(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

func TestParseOSRelease(t *testing.T) {
	tests := []struct{ in, want string }{
		{"NAME=\"Debian GNU/Linux\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n", "Debian GNU/Linux 12 (bookworm)"},
		{"NAME=Alpine\n", "Alpine"},
		{"ID=x\n", ""},
	}
	for _, tt := range tests {
		if got := parseOSRelease([]byte(tt.in)); got != tt.want {
			t.Errorf("parseOSRelease(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestCollectFromFakeRoot(t *testing.T) {
	root := fstest.MapFS{
		"proc/cpuinfo":              {Data: []byte("processor : 0\nmodel name : Test CPU\nprocessor : 1\nmodel name : Test CPU\nprocessor : 2\n")},
		"proc/meminfo":              {Data: []byte("MemTotal: 2048 kB\n")},
		"etc/os-release":            {Data: []byte("PRETTY_NAME=\"Test OS 1\"\n")},
		"proc/sys/kernel/osrelease": {Data: []byte("9.9.9-test\n")},
		"proc/loadavg":              {Data: []byte("1.50 0.75 0.25 3/345 6789\n")},
	}
	e := collect(context.Background(), root, "", buildVCS{revision: "abc123", modified: true})
	if e.CPUModel != "Test CPU" || e.Cores != 3 || e.MemoryBytes != 2048*1024 || e.OS != "Test OS 1" || e.Kernel != "9.9.9-test" {
		t.Errorf("collect = %+v", e)
	}
	if e.LoadAverage != [3]float64{1.5, 0.75, 0.25} {
		t.Errorf("load average = %v", e.LoadAverage)
	}
	if e.AllotCommit != "abc123" || !e.AllotModified {
		t.Errorf("build stamp not preferred: commit %q modified %v", e.AllotCommit, e.AllotModified)
	}
	if e.GoVersion == "" || e.GOMAXPROCS < 1 || e.Arch == "" {
		t.Errorf("runtime facts missing: %+v", e)
	}
	s := e.String()
	for _, want := range []string{"Test CPU × 3", "Test OS 1", "kernel 9.9.9-test", "allot abc123+changes"} {
		if !strings.Contains(s, want) {
			t.Errorf("String() = %q, missing %q", s, want)
		}
	}
}

func TestCollectEmptyRootFallsBack(t *testing.T) {
	e := collect(context.Background(), fstest.MapFS{}, "", buildVCS{})
	if e.Cores < 1 {
		t.Errorf("cores = %d, want runtime.NumCPU fallback", e.Cores)
	}
	if e.AllotCommit != CommitUnknown {
		t.Errorf("commit = %q, want %q with no stamp and no directory", e.AllotCommit, CommitUnknown)
	}
}

// TestCommitFromGit runs inside this repository, where go test stamps no
// VCS information, so the commit must come from git and match HEAD.
func TestCommitFromGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI runs in a git clone, but git rev-parse HEAD failed: %v", err)
		}
		t.Skipf("not inside a git checkout: %v", err)
	}
	want := strings.TrimSpace(string(out))
	got, _ := commit(context.Background(), wd, buildVCS{})
	if got != want {
		t.Errorf("commit = %q, want HEAD %q", got, want)
	}
}

// TestCommitOutsideAllot proves a git checkout of another module is not
// mistaken for allot's.
func TestCommitOutsideAllot(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	dir := t.TempDir()
	run := func(args ...string) {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/other\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run("init", "-q")
	run("add", "go.mod")
	run("commit", "-q", "-m", "x")
	if got, _ := commit(context.Background(), dir, buildVCS{}); got != CommitUnknown {
		t.Errorf("commit in another module = %q, want %q", got, CommitUnknown)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module allot\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run("commit", "-q", "-am", "y")
	got, modified := commit(context.Background(), dir, buildVCS{})
	if !isHexCommit(got) || modified {
		t.Errorf("commit in an allot checkout = %q (modified %v), want a clean hex commit", got, modified)
	}
}

func TestEnvJSONRoundTrip(t *testing.T) {
	e := Collect(context.Background())
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	var back Env
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back != e {
		t.Errorf("round trip changed Env:\n got %+v\nwant %+v", back, e)
	}
	t.Logf("this machine: %s", e)
}
