package servertest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// build holds the allot binary built once per test process.
var build struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// Main runs a package's tests and removes the binary BuildAllot built. Call
// it from TestMain: os.Exit(servertest.Main(m)).
func Main(m *testing.M) int {
	code := m.Run()
	if build.dir != "" {
		os.RemoveAll(build.dir)
	}
	return code
}

// BuildAllot builds ./cmd/allot once per test process and returns the
// binary's path.
func BuildAllot(t testing.TB) string {
	t.Helper()
	build.once.Do(func() {
		root, err := moduleRoot()
		if err != nil {
			build.err = err
			return
		}
		build.dir, build.err = os.MkdirTemp("", "allot-servertest-")
		if build.err != nil {
			return
		}
		build.path = filepath.Join(build.dir, "allot")
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "go", "build", "-o", build.path, "./cmd/allot")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			build.err = fmt.Errorf("go build ./cmd/allot: %w\n%s", err, out)
		}
	})
	if build.err != nil {
		t.Fatalf("servertest: %v", build.err)
	}
	return build.path
}

func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("not inside the allot module")
	}
	return filepath.Dir(gomod), nil
}

var installMu sync.Mutex

// RequireTool returns the path of a tool of Debian's redis-tools package
// (redis-cli, redis-benchmark). When it is missing and we are root, it
// installs the package with apt-get; when that is not possible the test
// fails under CI=true and is skipped otherwise, saying why.
func RequireTool(t testing.TB, name string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	installMu.Lock()
	defer installMu.Unlock()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	why := ""
	if os.Geteuid() != 0 {
		why = name + " is missing and only root can install redis-tools (apt-get install -y redis-tools)"
	} else if err := aptInstall("redis-tools"); err != nil {
		why = err.Error()
	} else if p, err := exec.LookPath(name); err == nil {
		return p
	} else {
		why = "redis-tools installed but " + name + " is still not found"
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("servertest: %s", why)
	}
	t.Skipf("servertest: %s", why)
	return ""
}

func aptInstall(pkgs ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	run := func(args ...string) error {
		argv := append([]string{"-q", "-y", "-o", "DPkg::Lock::Timeout=300"}, args...)
		cmd := exec.CommandContext(ctx, "apt-get", argv...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("apt-get %s: %w\n%s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	if err := run("update"); err != nil {
		return err
	}
	return run(append([]string{"install", "--no-install-recommends"}, pkgs...)...)
}
