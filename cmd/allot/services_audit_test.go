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

// An unknown server name is bad input (exit 2) and the list of known ones
// names the NATS cluster and its nodes too; --durability with down or
// status, which change no server's durability, is refused, not ignored.
func TestServicesBadNamesAndFlags(t *testing.T) {
	dir := t.TempDir()
	code, _, stderr := runCLI("services", "status", "redis", "mongodb", "--dir", dir)
	if code != 2 || !strings.Contains(stderr, `"mongodb"`) || !strings.Contains(stderr, "nats-1") {
		t.Errorf("an unknown server: exit %d, stderr %q; want 2, the name and the known ones with nats-1", code, stderr)
	}
	for _, action := range []string{"down", "status"} {
		code, _, stderr := runCLI("services", action, "redis", "--dir", dir, "--durability", "write")
		if code != 2 || !strings.Contains(stderr, "--durability applies to up") {
			t.Errorf("%s --durability write: exit %d, stderr %q; want 2 and why", action, code, stderr)
		}
	}
	if code, _, stderr := runCLI("services", "status", "nats", "--dir", dir); code != 0 {
		t.Errorf("status nats: exit %d, stderr %q", code, stderr)
	}
}
