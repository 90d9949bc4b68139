package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"allot/sim"
)

// runCLI runs allot with args and returns the exit code, stdout and stderr.
func runCLI(args ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	code := run(args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// noTempFiles fails if a temporary file of writeFileAtomic is left in dir.
func noTempFiles(t *testing.T, dir string) {
	t.Helper()
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Errorf("temporary file left behind: %s", e.Name())
		}
	}
}

// allot report r.json -o r.json would replace the results with the page:
// the one input the page cannot be drawn again from.
func TestAuditReportRefusesToOverwriteItsInput(t *testing.T) {
	dir := t.TempDir()
	in := writeResults(t, dir)
	before, err := os.ReadFile(in)
	if err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(in, link); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{in, link, filepath.Join(dir, ".", "results.json")} {
		code, _, stderr := runCLI("report", in, "-o", out)
		if code != 2 || !strings.Contains(stderr, "is the results file") {
			t.Errorf("-o %s: exit %d, stderr %q; want exit 2 naming the clash", out, code, stderr)
		}
		after, err := os.ReadFile(in)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(after, before) {
			t.Fatalf("-o %s overwrote the results file: %.60q", out, after)
		}
	}
	noTempFiles(t, dir)
}

// -o through a symbolic link writes the file the link names and keeps the
// link, as every other tool does; the rename used to replace the link with
// a regular file (and, run as root, replaced /dev/stdout the same way).
func TestAuditReportOutputThroughSymlink(t *testing.T) {
	dir := t.TempDir()
	in := writeResults(t, dir)
	target := filepath.Join(dir, "target.html")
	if err := os.WriteFile(target, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.html")
	if err := os.Symlink("target.html", link); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCLI("report", in, "-o", link); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("-o %s replaced the symbolic link (%v, %v)", link, fi.Mode(), err)
	}
	page, err := os.ReadFile(target)
	if err != nil || !bytes.HasPrefix(page, []byte("<!DOCTYPE html>")) {
		t.Errorf("the link's target does not hold the page: %.40q, %v", page, err)
	}
	noTempFiles(t, dir)
}

// -o to something that is not a regular file (a FIFO here; /dev/stdout in
// use) writes into it rather than renaming a new file over it.
func TestAuditReportOutputToFIFO(t *testing.T) {
	dir := t.TempDir()
	in := writeResults(t, dir)
	fifo := filepath.Join(dir, "page.fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	// O_RDWR opens a FIFO without waiting for a writer (Linux), so the test
	// cannot hang if the command never opens it.
	r, err := os.OpenFile(fifo, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got := make(chan []byte, 1)
	go func() {
		var page []byte
		buf := make([]byte, 1<<16)
		for !bytes.Contains(page, []byte("</html>")) {
			n, err := r.Read(buf)
			page = append(page, buf[:n]...)
			if err != nil {
				break
			}
		}
		got <- page
	}()
	code, _, stderr := runCLI("report", in, "-o", fifo)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	fi, err := os.Lstat(fifo)
	if err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("-o %s replaced the FIFO with a %v (%v)", fifo, fi.Mode(), err)
	}
	if page := <-got; !bytes.HasPrefix(page, []byte("<!DOCTYPE html>")) {
		t.Errorf("the FIFO carried %.40q", page)
	}
	noTempFiles(t, dir)
}

// allot gen -o FILE whose write fails halfway (a full disk; here a file size
// limit) leaves FILE as it was, not a truncated op file.
func TestAuditGenFailedWriteKeepsTheOldFile(t *testing.T) {
	if path := os.Getenv("ALLOT_AUDIT_GEN_OUT"); path != "" {
		// The child: writes past 64 KiB fail with EFBIG (Go ignores
		// SIGXFSZ).
		lim := syscall.Rlimit{Cur: 1 << 16, Max: 1 << 16}
		if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
			t.Fatal(err)
		}
		code, _, stderr := runCLI("gen", "--preset", "hot", "--ops", "100000", "-o", path)
		os.Stderr.WriteString(stderr)
		os.Exit(code)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "ops.txt")
	old := []byte("the op file of yesterday\n")
	if err := os.WriteFile(path, old, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestAuditGenFailedWriteKeepsTheOldFile$")
	cmd.Env = append(os.Environ(), "ALLOT_AUDIT_GEN_OUT="+path)
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("gen past the file size limit succeeded:\n%s", out)
	}
	if !strings.Contains(string(out), "file too large") {
		t.Errorf("gen's error does not say what failed:\n%s", out)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, old) {
		t.Errorf("a failed gen left %s as %d bytes starting %.40q; want it untouched", path, len(got), got)
	}
	noTempFiles(t, dir)
}

// gen -o still writes to a device or through a link (/dev/stdout).
func TestAuditGenOutputThroughSymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "ops.txt")
	link := filepath.Join(dir, "link.txt")
	if err := os.Symlink("ops.txt", link); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCLI("gen", "--preset", "hot", "--ops", "10", "-o", link); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("-o %s replaced the symbolic link", link)
	}
	if b, err := os.ReadFile(target); err != nil || !bytes.HasPrefix(b, []byte("allot-ops\t")) {
		t.Errorf("the link's target does not hold the op file: %.40q, %v", b, err)
	}
	noTempFiles(t, dir)
}

// An explicit zero is a bad value, not "the preset's": --ops 0 used to
// write the preset's million ops. Errors name the flag and the value.
func TestAuditGenFlagValues(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--ops", "0"}, "--ops must be positive, got 0"},
		{[]string{"--rows", "0"}, "--rows must be positive, got 0"},
		{[]string{"--skus", "0"}, "--skus must be positive, got 0"},
		{[]string{"--skus", "-3"}, "--skus must be positive, got -3"},
		{[]string{"--rows", "-1", "--ops", "5"}, "--rows must be positive, got -1"},
	}
	for _, tt := range tests {
		args := append([]string{"gen", "--preset", "hot"}, tt.args...)
		code, stdout, stderr := runCLI(args...)
		if code != 2 || !strings.Contains(stderr, tt.want) || stdout != "" {
			t.Errorf("%v: exit %d, stderr %q, %d bytes out; want exit 2, %q and nothing written", tt.args, code, stderr, len(stdout), tt.want)
		}
	}
	// Unset, the preset's value still applies.
	code, stdout, stderr := runCLI("gen", "--preset", "hot", "--ops", "3")
	if code != 0 || !strings.HasPrefix(stdout, "allot-ops\tv1\tname=hot\trows=20\t") {
		t.Errorf("gen --preset hot --ops 3: exit %d, %q, %.80q", code, stderr, stdout)
	}
}

// --fault-rate is a probability: a negative one used to mean "none", and
// NaN, 2 or +Inf "every call", all without a word.
func TestAuditSimFaultRate(t *testing.T) {
	for _, v := range []string{"-0.5", "NaN", "2", "+Inf", "-Inf"} {
		code, stdout, stderr := runCLI("sim", "--seeds", "1", "--ops", "1", "--seed", "3", "--fault-rate", v)
		if code != 2 || !strings.Contains(stderr, "--fault-rate must be from 0 to 1") || stdout != "" {
			t.Errorf("--fault-rate %s: exit %d, stdout %q, stderr %q; want exit 2 naming the flag", v, code, stdout, stderr)
		}
	}
	for _, v := range []string{"0", "1", "0.25"} {
		if code, _, stderr := runCLI("sim", "--seeds", "1", "--ops", "1", "--seed", "3", "--fault-rate", v); code != 0 {
			t.Errorf("--fault-rate %s: exit %d, %s", v, code, stderr)
		}
	}
}

// --seed S --seeds N runs S..S+N-1: past 2^64-1 it wrapped to seed 0, which
// --seed cannot replay (0 there means a random seed).
func TestAuditSimSeedRange(t *testing.T) {
	code, stdout, stderr := runCLI("sim", "--seeds", "2", "--ops", "1", "--seed", "18446744073709551615")
	if code != 2 || !strings.Contains(stderr, "--seeds") || stdout != "" {
		t.Errorf("exit %d, stdout %q, stderr %q; want exit 2 and nothing run", code, stdout, stderr)
	}
	if code, _, stderr := runCLI("sim", "--seeds", "1", "--ops", "1", "--seed", "18446744073709551615"); code != 0 {
		t.Errorf("the last seed alone: exit %d, %s", code, stderr)
	}
}

// The command printed for a failing seed must replay it: the fault rate is
// part of what the seed draws from, so a run with --fault-rate replayed
// without it is another run.
func TestAuditSimReplayCommandKeepsFaultRate(t *testing.T) {
	res := &sim.Result{Seed: 42, Ops: 100, Durability: "fsync"}
	for _, tt := range []struct {
		rate float64
		want string
	}{
		{sim.FaultRateDefault, res.ReplayCommand()},
		{0, res.ReplayCommand() + " --fault-rate 0"},
		{0.05, res.ReplayCommand() + " --fault-rate 0.05"},
	} {
		if got := simReplayCommand(res, tt.rate); got != tt.want {
			t.Errorf("rate %v: %q, want %q", tt.rate, got, tt.want)
		}
	}
}

// Nothing after "help <command>" is silently dropped: allot --help gen is
// gen's help (it printed the general usage), allot help gen extra an error
// (it printed gen's help), and "help help" is the usage rather than an
// unknown command.
func TestAuditHelpArguments(t *testing.T) {
	for _, args := range [][]string{{"help", "gen", "extra"}, {"--help", "gen", "extra"}, {"-h", "x", "y"}} {
		code, stdout, stderr := runCLI(args...)
		if code != 2 || !strings.Contains(stderr, "unexpected argument") {
			t.Errorf("allot %s: exit %d, stdout %.40q, stderr %q; want exit 2 naming the argument", strings.Join(args, " "), code, stdout, stderr)
		}
	}
	for _, args := range [][]string{{"--help", "gen"}, {"-h", "gen"}, {"-help", "gen"}} {
		code, stdout, stderr := runCLI(args...)
		if code != 0 || !strings.Contains(stdout, "Usage: allot gen") {
			t.Errorf("allot %s: exit %d, stdout %.60q, stderr %q; want gen's help", strings.Join(args, " "), code, stdout, stderr)
		}
	}
	code, stdout, _ := runCLI("help", "help")
	if code != 0 || !strings.Contains(stdout, "Usage:") {
		t.Errorf("allot help help: exit %d, %.60q", code, stdout)
	}
	_, stdout, _ = runCLI("help")
	if !strings.Contains(stdout, "allot help <command>") {
		t.Errorf("the usage does not mention allot help <command>:\n%s", stdout)
	}
}

// gen's help names every value -o takes.
func TestAuditGenHelpNamesStdout(t *testing.T) {
	code, stdout, _ := runCLI("help", "gen")
	if code != 0 || !strings.Contains(stdout, "- for standard output") {
		t.Errorf("allot help gen: exit %d, lacks \"- for standard output\":\n%s", code, stdout)
	}
}
