package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// allot ingest with a source other than mysql printed its prefix twice:
// "allot ingest: allot ingest: the only source is mysql".
func TestReadmeAudit10IngestUnknownSourceOnePrefix(t *testing.T) {
	for _, args := range [][]string{{"ingest"}, {"ingest", "postgres"}} {
		code, _, stderr := runCLI(args...)
		if code != 2 {
			t.Errorf("allot %s: exit %d, want 2", strings.Join(args, " "), code)
		}
		if strings.Count(stderr, "allot ingest:") != 1 || !strings.Contains(stderr, "the only source is mysql") {
			t.Errorf("allot %s: stderr %q; want one 'allot ingest:' prefix and the reason", strings.Join(args, " "), stderr)
		}
	}
}

// allot shards init --count N out of 1..256 is a usage error like any
// other bad flag value (exit 2, naming the range), checked before the
// cluster is dialled; --count 0 was reported as "--count is required"
// and a negative or too large count exited 1.
func TestReadmeAudit10ShardsInitCountRange(t *testing.T) {
	// Nothing listens on port 1: a count that passed the check would fail
	// to connect (exit 1) rather than touch a cluster.
	const nowhere = "nats://127.0.0.1:1"
	for _, n := range []string{"0", "-1", "257"} {
		code, _, stderr := runCLI("shards", "init", "--cluster", nowhere, "--count", n)
		if code != 2 || !strings.Contains(stderr, "--count must be 1 to 256") || !strings.Contains(stderr, "got "+n) {
			t.Errorf("shards init --count %s: exit %d, stderr %q; want exit 2 naming the range and the value", n, code, stderr)
		}
	}
	code, _, stderr := runCLI("shards", "init", "--cluster", nowhere)
	if code != 2 || !strings.Contains(stderr, "--count is required") {
		t.Errorf("shards init without --count: exit %d, stderr %q; want exit 2, --count is required", code, stderr)
	}
}

// Every document a command's --help sends the reader to exists in the
// checkout (the help named DESIGN.md, which the repository does not have).
func TestReadmeAudit10HelpNamesOnlyDocumentsThatExist(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root %s: %v", root, err)
	}
	helps := [][]string{
		{"bench", "--help"}, {"bench", "serve", "--help"}, {"gen", "--help"},
		{"ingest", "mysql", "--help"}, {"relay", "--help"}, {"report", "--help"},
		{"serve", "--help"}, {"services", "--help"}, {"shards", "init", "--help"},
		{"shards", "recover", "--help"}, {"sim", "--help"},
	}
	for name := range commands {
		helps = append(helps, []string{name, "--help"})
	}
	doc := regexp.MustCompile(`[A-Za-z0-9_./-]+\.md\b`)
	for _, args := range helps {
		code, stdout, stderr := runCLI(args...)
		if code != 0 {
			t.Errorf("allot %s: exit %d (%s)", strings.Join(args, " "), code, stderr)
			continue
		}
		for _, name := range doc.FindAllString(stdout, -1) {
			if _, err := os.Stat(filepath.Join(root, name)); err != nil {
				t.Errorf("allot %s names %s, which the checkout does not have", strings.Join(args, " "), name)
			}
		}
	}
}
