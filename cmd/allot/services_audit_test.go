package main

import (
	"strings"
	"testing"
)

// The help says flags may come before or after the action; after a
// server's name they were taken for more names ("unknown server
// --dir"), or worse, read from the wrong directory.
func TestAuditServicesFlagsAfterNames(t *testing.T) {
	dir := t.TempDir()
	code, stdout, stderr := runCLI("services", "status", "redis", "--dir", dir)
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	if !strings.Contains(stdout, "redis") || !strings.Contains(stdout, "stopped") {
		t.Fatalf("status of redis in an empty --dir: %q", stdout)
	}
	code, _, stderr = runCLI("services", "status", "redis", "--durability", "sometimes")
	if code != 2 || !strings.Contains(stderr, "sometimes") {
		t.Fatalf("a bad --durability after a name: exit %d, stderr %q", code, stderr)
	}
}
