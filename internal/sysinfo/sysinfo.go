package sysinfo

import (
	"bufio"
	"bytes"
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
)

// CommitUnknown is the commit recorded when neither the build nor a git
// checkout says which code ran.
const CommitUnknown = "unknown"

// gitTimeout bounds the git subprocess: a hung git (a lock, a slow network
// file system) must not hold up a bench.
const gitTimeout = 5 * time.Second

// Env is the machine and code a bench ran on. Zero fields are facts that
// could not be learned.
type Env struct {
	// CPUModel is the processor's model name from /proc/cpuinfo.
	CPUModel string `json:"cpu_model"`
	// Cores is the number of logical CPUs the kernel lists.
	Cores int `json:"cores"`
	// GOMAXPROCS is how many of them Go used (it honours CPU affinity and
	// cgroup limits, so it can be lower than Cores).
	GOMAXPROCS int `json:"gomaxprocs"`
	// MemoryBytes is the total RAM.
	MemoryBytes int64 `json:"memory_bytes"`
	// OS is the distribution's name, e.g. "Debian GNU/Linux 12 (bookworm)".
	OS string `json:"os"`
	// Arch is GOOS/GOARCH, e.g. "linux/amd64".
	Arch string `json:"arch"`
	// Kernel is the kernel release, e.g. "6.1.0-18-amd64".
	Kernel string `json:"kernel"`
	// GoVersion is the Go toolchain allot was built with.
	GoVersion string `json:"go_version"`
	// AllotCommit is the git commit of allot that ran, or CommitUnknown.
	AllotCommit string `json:"allot_commit"`
	// AllotModified says the working tree had uncommitted changes, so the
	// commit alone does not reproduce the code.
	AllotModified bool `json:"allot_modified,omitempty"`
	// LoadAverage is the 1, 5 and 15 minute load average when the facts
	// were collected: on a shared machine, a load near or above Cores means
	// the bench competed for CPU with something else.
	LoadAverage [3]float64 `json:"load_average"`
	// Hostname is the machine's name, when it has one.
	Hostname string `json:"hostname,omitempty"`
}

// Collect describes this machine and this build of allot. It never fails:
// see the package comment. ctx bounds the git call.
func Collect(ctx context.Context) Env {
	wd, _ := os.Getwd()
	return collect(ctx, os.DirFS("/"), wd, buildInfo())
}

// buildVCS is what the Go linker stamped into the binary about version
// control; revision is empty when it stamped nothing (go test, go run, or
// -buildvcs=false, which this module's GOFLAGS set).
type buildVCS struct {
	revision string
	modified bool
}

func buildInfo() buildVCS {
	var b buildVCS
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			b.revision = s.Value
		case "vcs.modified":
			b.modified = s.Value == "true"
		}
	}
	return b
}

// collect is Collect with its inputs passed in, so tests can feed it a fake
// /proc and a directory of their choosing.
func collect(ctx context.Context, root fs.FS, wd string, vcs buildVCS) Env {
	e := Env{
		GOMAXPROCS: runtime.GOMAXPROCS(0),
		Arch:       runtime.GOOS + "/" + runtime.GOARCH,
		GoVersion:  runtime.Version(),
	}
	if b, err := fs.ReadFile(root, "proc/cpuinfo"); err == nil {
		e.CPUModel, e.Cores = parseCPUInfo(b)
	}
	if e.Cores == 0 {
		e.Cores = runtime.NumCPU()
	}
	if b, err := fs.ReadFile(root, "proc/meminfo"); err == nil {
		e.MemoryBytes = parseMemTotal(b)
	}
	if b, err := fs.ReadFile(root, "etc/os-release"); err == nil {
		e.OS = parseOSRelease(b)
	}
	if e.OS == "" {
		e.OS = runtime.GOOS
	}
	if b, err := fs.ReadFile(root, "proc/sys/kernel/osrelease"); err == nil {
		e.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := fs.ReadFile(root, "proc/loadavg"); err == nil {
		e.LoadAverage = parseLoadAverage(b)
	}
	if h, err := os.Hostname(); err == nil {
		e.Hostname = h
	}
	e.AllotCommit, e.AllotModified = commit(ctx, wd, vcs)
	return e
}

// commit prefers the stamp in the binary; failing that, it asks git, but only
// when wd lies inside a checkout of allot itself (a go.mod naming module
// allot at the top), so that running a built binary from some other
// repository never records that repository's commit.
func commit(ctx context.Context, wd string, vcs buildVCS) (string, bool) {
	if vcs.revision != "" {
		return vcs.revision, vcs.modified
	}
	if wd == "" {
		return CommitUnknown, false
	}
	ctx, cancel := context.WithTimeout(ctx, gitTimeout)
	defer cancel()
	top, err := git(ctx, wd, "rev-parse", "--show-toplevel")
	if err != nil || !isAllotModule(filepath.Join(top, "go.mod")) {
		return CommitUnknown, false
	}
	rev, err := git(ctx, top, "rev-parse", "HEAD")
	if err != nil || !isHexCommit(rev) {
		return CommitUnknown, false
	}
	// Untracked files count as changes only if git would show them; ignored
	// build output does not.
	status, err := git(ctx, top, "status", "--porcelain", "--untracked-files=no")
	return rev, err == nil && status != ""
}

func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	return strings.TrimSpace(string(out)), err
}

func isAllotModule(goMod string) bool {
	b, err := os.ReadFile(goMod)
	if err != nil {
		return false
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 && f[0] == "module" {
			return strings.Trim(f[1], `"`) == "allot"
		}
	}
	return false
}

func isHexCommit(s string) bool {
	if len(s) != 40 && len(s) != 64 { // SHA-1 or SHA-256 repositories
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// parseCPUInfo returns the first model name and the number of processors.
// x86 kernels say "model name"; some ARM kernels say "Processor" or
// "Hardware" or nothing at all, in which case the model stays empty.
func parseCPUInfo(b []byte) (model string, cores int) {
	var fallback string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024) // flags lines are long
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		switch key {
		case "processor":
			cores++
		case "model name", "cpu model":
			if model == "" {
				model = val
			}
		case "Processor", "Hardware": // older ARM kernels
			if fallback == "" {
				fallback = val
			}
		}
	}
	if model == "" {
		model = fallback
	}
	return strings.Join(strings.Fields(model), " "), cores
}

// parseMemTotal returns MemTotal in bytes, 0 when absent.
func parseMemTotal(b []byte) int64 {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "MemTotal:" {
			n, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil || n < 0 {
				return 0
			}
			if len(f) >= 3 && f[2] == "kB" {
				n *= 1024
			}
			return n
		}
	}
	return 0
}

// parseLoadAverage reads the first three fields of /proc/loadavg; a field
// that does not parse stays 0.
func parseLoadAverage(b []byte) [3]float64 {
	var out [3]float64
	for i, f := range strings.Fields(string(b)) {
		if i == len(out) {
			break
		}
		if v, err := strconv.ParseFloat(f, 64); err == nil && v >= 0 {
			out[i] = v
		}
	}
	return out
}

// parseOSRelease returns PRETTY_NAME, else NAME, from an os-release file.
func parseOSRelease(b []byte) string {
	var name string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), "=")
		if !ok {
			continue
		}
		if uq, err := strconv.Unquote(val); err == nil {
			val = uq
		} else {
			val = strings.Trim(val, `"'`)
		}
		switch key {
		case "PRETTY_NAME":
			return val
		case "NAME":
			name = val
		}
	}
	return name
}

// String is a one-line summary for terminals and report headers.
func (e Env) String() string {
	var parts []string
	cpu := e.CPUModel
	if cpu == "" {
		cpu = "unknown CPU"
	}
	parts = append(parts, cpu+" × "+strconv.Itoa(e.Cores))
	if e.MemoryBytes > 0 {
		parts = append(parts, strconv.FormatFloat(float64(e.MemoryBytes)/(1<<30), 'f', 1, 64)+" GiB RAM")
	}
	osk := e.OS
	if e.Kernel != "" {
		osk += ", kernel " + e.Kernel
	}
	parts = append(parts, osk, e.GoVersion)
	c := e.AllotCommit
	if len(c) > 12 {
		c = c[:12]
	}
	if e.AllotModified {
		c += "+changes"
	}
	parts = append(parts, "allot "+c)
	return strings.Join(parts, "; ")
}
