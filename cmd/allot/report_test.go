package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"allot/bench"
)

func writeResults(t *testing.T, dir string) string {
	t.Helper()
	f := bench.ResultsFile{Version: bench.ResultsVersion, Runs: []bench.Result{{
		Store: "memory", Status: bench.StatusOK, Workers: 1, Mode: "closed", Ops: 10, Seconds: 1, OpsPerSec: 10,
		Throughput: []int64{10}, Check: bench.CheckResult{OK: true},
	}}}
	b, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "results.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestReportCommand(t *testing.T) {
	dir := t.TempDir()
	in := writeResults(t, dir)
	out := filepath.Join(dir, "out.html")
	var stdout, stderr bytes.Buffer
	// The flag after the file, as the README writes it.
	if code := run([]string{"report", in, "-o", out}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	page, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(page, []byte("<!DOCTYPE html>")) || !bytes.Contains(page, []byte("memory")) {
		t.Errorf("report is not the page: %.200s", page)
	}
	// Default name: results.json -> results.html.
	stderr.Reset()
	if code := run([]string{"report", in}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "results.html")); err != nil {
		t.Errorf("default output not written: %v", err)
	}
	// Standard output.
	stdout.Reset()
	if code := run([]string{"report", "-o", "-", in}, &stdout, &stderr); code != 0 || !strings.HasPrefix(stdout.String(), "<!DOCTYPE html>") {
		t.Errorf("-o - wrote %.50q, exit %d", stdout.String(), code)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Errorf("temporary file left behind: %s", e.Name())
		}
	}
}

func TestReportCommandErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte("{\"version\": 1,\n \"runs\": [}"), 0o644); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other.json")
	if err := os.WriteFile(other, []byte(`{"hello": "world"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	good := writeResults(t, dir)
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no file", []string{"report"}, 2, "want exactly one results file, got 0"},
		{"two files", []string{"report", good, good}, 2, "got 2"},
		{"missing", []string{"report", filepath.Join(dir, "nope.json"), "-o", filepath.Join(dir, "x.html")}, 1, "nope.json: no such file or directory"},
		{"invalid JSON", []string{"report", bad, "-o", filepath.Join(dir, "x.html")}, 1, "bad.json: report: results file is not valid JSON (line 2"},
		{"not results", []string{"report", other, "-o", filepath.Join(dir, "x.html")}, 1, `other.json: report: not an allot results file: it has no "version" field`},
		{"unwritable", []string{"report", good, "-o", filepath.Join(dir, "no-such-dir", "x.html")}, 1, "cannot write"},
		{"unknown flag", []string{"report", "--colour", good}, 2, "flag provided but not defined"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(tt.args, &stdout, &stderr)
			if code != tt.code || !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, stderr.String(), tt.code, tt.want)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "x.html")); !os.IsNotExist(err) {
		t.Errorf("a failed report left %s behind (%v)", "x.html", err)
	}
}

func TestReportHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"report", "--help"}, &stdout, &stderr); code != 0 {
		t.Fatalf("--help exit %d", code)
	}
	for _, want := range []string{"Usage: allot report", "-o string", "opens offline"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("help lacks %q:\n%s", want, stdout.String())
		}
	}
}
