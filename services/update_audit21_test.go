package services

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestAudit21AFailedUpdateDoesNotStopTheInstall: apt-get update fails
// (exit 100) when one source is broken, a third party's repository without
// a Release file or with an expired key, though every other source
// updated; `services up` then installed nothing and failed on a machine
// whose Debian sources were fine. The install goes on from the lists apt
// has, says the update failed, and when the install fails too, its error
// names both. The runs use private lists, cache and sources (one local
// repository without a Release file), so they touch nothing of the
// machine's apt and need no network.
func TestAudit21AFailedUpdateDoesNotStopTheInstall(t *testing.T) {
	dir := t.TempDir()
	repo := filepath.Join(dir, "repo")
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "Packages"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, opts := privateApt(t, "deb file:"+repo+" ./\n")
	old := aptOptions
	aptOptions = opts
	defer func() { aptOptions = old }()
	ctx := context.Background()

	// coreutils is installed on every Debian: the install has nothing to
	// fetch and succeeds once it is tried.
	var log strings.Builder
	if err := aptInstall(ctx, &log, []string{"coreutils"}); err != nil {
		t.Fatalf("install after a failed update: %v", err)
	}
	if !strings.Contains(log.String(), "Release file") {
		t.Errorf("the log does not say why the update failed:\n%s", log.String())
	}

	log.Reset()
	err := aptInstall(ctx, &log, []string{"allot-no-such-package"})
	if err == nil {
		t.Fatal("an install of a package no source has: no error")
	}
	for _, want := range []string{"Unable to locate package allot-no-such-package", "Release file"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q:\n%v", want, err)
		}
	}
}

// privateApt makes apt lists, cache and sources of a test's own (the
// sources list holding sources) and returns their folder and the options
// that point apt-get at them: its runs touch nothing of the machine's apt.
// It skips unless root, with apt-get.
func privateApt(t *testing.T, sources string) (dir string, opts []string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("apt-get update runs as root only")
	}
	if _, err := exec.LookPath("apt-get"); err != nil {
		t.Skip("no apt-get")
	}
	dir = t.TempDir()
	for _, d := range []string{"lists/partial", "cache/archives/partial", "parts"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	list := filepath.Join(dir, "sources.list")
	if err := os.WriteFile(list, []byte(sources), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, []string{
		"-o", "Dir::State::Lists=" + filepath.Join(dir, "lists"),
		"-o", "Dir::Cache=" + filepath.Join(dir, "cache"),
		"-o", "Dir::Etc::SourceList=" + list,
		"-o", "Dir::Etc::SourceParts=" + filepath.Join(dir, "parts"),
	}
}

// TestAudit21OneMissingPackageDoesNotStopTheOthers: apt installs all or
// nothing, so one package no source has (a server a Debian release
// dropped) kept every other server's packages from installing, and `up`
// started nothing. The servers' packages are installed apart after the
// install of them all failed: the ones apt has are installed, and the
// error is the missing one's alone.
func TestAudit21OneMissingPackageDoesNotStopTheOthers(t *testing.T) {
	_, opts := privateApt(t, "")
	old := aptOptions
	aptOptions = opts
	defer func() { aptOptions = old }()
	ctx := context.Background()
	var log strings.Builder
	if err := aptInstall(ctx, &log, []string{"coreutils", "allot-no-such-package"}); err == nil {
		t.Fatal("apt installed a package no source has")
	}
	errs := installApart(ctx, &log, []server{
		packagesOnly{redisServer{}, "coreutils", []string{"coreutils"}},
		packagesOnly{redisServer{}, "missing", []string{"allot-no-such-package"}},
	})
	if err := errs["coreutils"]; err != nil {
		t.Errorf("the package apt has, installed apart: %v", err)
	}
	if err := errs["missing"]; err == nil || !strings.Contains(err.Error(), "allot-no-such-package") {
		t.Errorf("the package no source has, installed apart: %v", err)
	}
}

// packagesOnly is a server named n whose packages are pkgs, for the
// installer alone.
type packagesOnly struct {
	server
	n    string
	pkgs []string
}

func (p packagesOnly) name() string       { return p.n }
func (p packagesOnly) packages() []string { return p.pkgs }
