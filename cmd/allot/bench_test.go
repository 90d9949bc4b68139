package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"allot/bench"
	"allot/engine"
	"allot/report"
	"allot/server/servertest"
)

func runCmd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestBenchMemoryTable(t *testing.T) {
	code, out, errOut := runCmd(t, "bench", "--store", "memory", "--ops", "20000", "--workers", "4")
	if code != 0 {
		t.Fatalf("exit %d: %s%s", code, out, errOut)
	}
	for _, want := range []string{"ops/s", "p99.9 ms", "memory", "\ncheck: OK\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestBenchJSON: one object per run with at least the fields issue 2
// names, under those names.
func TestBenchJSON(t *testing.T) {
	code, out, errOut := runCmd(t, "bench", "--store", "memory", "--preset", "hot", "--ops", "5000", "--durability", "write,none", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s%s", code, out, errOut)
	}
	lines := 0
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		lines++
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %d is not JSON: %v", lines, err)
		}
		for _, k := range []string{"store", "workload", "workers", "durability", "seconds", "ops_per_sec", "latency_ms", "retries", "errors", "check"} {
			if _, ok := m[k]; !ok {
				t.Errorf("line %d lacks %q", lines, k)
			}
		}
		wl := m["workload"].(map[string]any)
		for _, k := range []string{"name", "rows", "ops", "seed"} {
			if _, ok := wl[k]; !ok {
				t.Errorf("workload lacks %q", k)
			}
		}
		lat := m["latency_ms"].(map[string]any)
		for _, k := range []string{"p50", "p99", "p999", "max"} {
			if _, ok := lat[k]; !ok {
				t.Errorf("latency_ms lacks %q", k)
			}
		}
		chk := m["check"].(map[string]any)
		if chk["ok"] != true || chk["violations"] == nil {
			t.Errorf("check %v", chk)
		}
	}
	if lines != 2 {
		t.Fatalf("%d JSON lines for two durabilities:\n%s", lines, out)
	}
}

func TestBenchBadInput(t *testing.T) {
	dir := t.TempDir()
	badFile := filepath.Join(dir, "bad.ops")
	os.WriteFile(badFile, []byte("not an op file\n"), 0o644)
	for _, args := range [][]string{
		{"--preset", "cold"},
		{"--store", "nope"},
		{"--stores", "memory,nope"},
		{"--workers", "0"},
		{"--workers", "-3"},
		{"--durability", "fast"},
		{"--pipeline", "0"},
		{"--retry-max", "-1"},
		{"--rate", "-5"},
		{"--arrival", "bursty", "--rate", "10"},
		{"--arrival", "poisson"},
		{"--sweep", "threads=1,2"},
		{"--sweep", "workers=1,2", "--workers", "4"},
		{"--ops-file", filepath.Join(dir, "missing.ops")},
		{"--ops-file", badFile},
		{"--ops-file", badFile, "--preset", "hot"},
		{"--rows", "100", "--preset", "hot"},
		{"--duration", "-1s"},
		{"--faults", "kill-primary"},
		{"--http-addr", "127.0.0.1:1", "--breakdown"},
		{"--http-addr", "127.0.0.1:1", "--addr", "127.0.0.1:2"},
		{"--kill", "1", "--faults", "kill-primary,kill-everything"},
		{"stray"},
		{"--ops", "0"},
		{"--rows", "0"},
		{"--skus", "0"},
		{"--workload", "rw", "--ops", "0"},
		{"--workload", "kv", "--ops", "-2"},
		{"--workload", "checkout", "--retry-delay", "1ms"},
		{"--workload", "rw", "--retry-max", "3"},
	} {
		code, _, errOut := runCmd(t, append([]string{"bench", "--store", "memory"}, args...)...)
		if code != 2 || (len(errOut) == 0) {
			t.Errorf("bench %v: exit %d, stderr %q; want 2 and a message", args, code, errOut)
		}
	}
}

// TestBenchBreakdownOfARunningServer: --breakdown reads the stage times of
// a server the bench did not start at --http-addr; without it, the run
// goes on and stderr says what is missing.
func TestBenchBreakdownOfARunningServer(t *testing.T) {
	s := servertest.Start(t, servertest.Options{Durability: engine.DurabilityFsync})
	args := []string{"bench", "--store", "allot", "--addr", s.RESPAddr(), "--ops", "3000", "--quiet", "--breakdown"}
	code, out, errOut := runCmd(t, append(args, "--http-addr", s.HTTPAddr())...)
	if code != 0 || !strings.Contains(out, "breakdown (allot") || !regexp.MustCompile(`(?m)^ +sync +[1-9]`).MatchString(out) {
		t.Fatalf("exit %d, want 0, a breakdown table and a sync row:\n%s%s", code, out, errOut)
	}
	code, out, errOut = runCmd(t, args...)
	if code != 0 || strings.Contains(out, "breakdown (") || !strings.Contains(errOut, "give it with --http-addr") {
		t.Fatalf("without --http-addr: exit %d, want 0, no table and why on stderr:\n%s%s", code, out, errOut)
	}
}

// TestBenchServerDown: a store whose server cannot be reached is a row
// saying so, and the exit code is non-zero, while the other stores run.
func TestBenchServerDown(t *testing.T) {
	code, out, errOut := runCmd(t, "bench", "--stores", "memory,redis", "--addr", "127.0.0.1:1", "--ops", "2000", "--quiet")
	if code != 1 {
		t.Fatalf("exit %d, want 1: %s%s", code, out, errOut)
	}
	if !strings.Contains(out, "SERVER DOWN") || !strings.Contains(out, "check: OK  (memory") || !strings.Contains(out, "server down  (redis") {
		t.Fatalf("output:\n%s", out)
	}
}

// TestGenThenReplay: gen writes the same bytes as the workload package for
// the same flags, and bench replays the file with the same outcome.
func TestGenThenReplay(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "hot.ops")
	if code, out, errOut := runCmd(t, "gen", "--preset", "hot", "--ops", "3000", "--seed", "9", "-o", file); code != 0 {
		t.Fatalf("gen: exit %d %s%s", code, out, errOut)
	}
	code, stdout, _ := runCmd(t, "gen", "--preset", "hot", "--ops", "3000", "--seed", "9")
	onDisk, _ := os.ReadFile(file)
	if code != 0 || stdout != string(onDisk) {
		t.Fatal("gen to a file and to stdout differ")
	}
	results := filepath.Join(dir, "results.json")
	html := filepath.Join(dir, "report.html")
	code, out, errOut := runCmd(t, "bench", "--store", "memory", "--ops-file", file, "--sweep", "workers=1,4", "--out", results, "--report", html)
	if code != 0 {
		t.Fatalf("bench --ops-file: exit %d %s%s", code, out, errOut)
	}
	f, err := report.ReadResultsFile(results)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Runs) != 2 || f.Runs[0].Workload.File != file || f.Runs[1].Sweep == nil || f.Runs[1].Sweep.Label != "workers=4" || len(f.Environment) == 0 {
		t.Fatalf("results file: %d runs, %+v", len(f.Runs), f.Runs)
	}
	if f.Runs[0].Workload.Name != "hot" || f.Runs[0].Workload.Seed != 9 || f.Runs[0].Histogram == "" || f.Version != bench.ResultsVersion {
		t.Fatalf("results file lost labels: %+v", f.Runs[0].Workload)
	}
	if page, err := os.ReadFile(html); err != nil || !bytes.Contains(page, []byte("<html")) {
		t.Fatalf("report: %v", err)
	}
	for _, bad := range [][]string{{"--preset", "nope"}, {"--rows", "-1"}, {"stray"}} {
		if code, _, _ := runCmd(t, append([]string{"gen"}, bad...)...); code != 2 {
			t.Errorf("gen %v: exit %d, want 2", bad, code)
		}
	}
}

func TestBenchOpenLoopRateSweep(t *testing.T) {
	code, out, errOut := runCmd(t, "bench", "--store", "memory", "--sweep", "rate=2000,4000", "--duration", "300ms", "--workers", "4")
	if code != 0 {
		t.Fatalf("exit %d: %s%s", code, out, errOut)
	}
	for _, want := range []string{"rate=2000", "rate=4000", "open loop", "response p99", "service p99"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
