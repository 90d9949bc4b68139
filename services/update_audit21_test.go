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
	if os.Geteuid() != 0 {
		t.Skip("apt-get update runs as root only")
	}
	if _, err := exec.LookPath("apt-get"); err != nil {
		t.Skip("no apt-get")
	}
	dir := t.TempDir()
	for _, d := range []string{"lists/partial", "cache/archives/partial", "parts", "repo"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "repo", "Packages"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	sources := filepath.Join(dir, "sources.list")
	if err := os.WriteFile(sources, []byte("deb file:"+filepath.Join(dir, "repo")+" ./\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := aptOptions
	aptOptions = []string{
		"-o", "Dir::State::Lists=" + filepath.Join(dir, "lists"),
		"-o", "Dir::Cache=" + filepath.Join(dir, "cache"),
		"-o", "Dir::Etc::sourcelist=" + sources,
		"-o", "Dir::Etc::sourceparts=" + filepath.Join(dir, "parts"),
	}
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
