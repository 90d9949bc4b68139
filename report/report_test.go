package report

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"allot/bench"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the golden files in testdata/")

// keepDir is where tests leave the pages and screenshots they make: a
// temporary directory, or ALLOT_REPORT_KEEP when set, so a person can open
// them.
func keepDir(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("ALLOT_REPORT_KEEP"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}

func render(t *testing.T, f *bench.ResultsFile) string {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteHTML(&buf, f); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

var (
	tagRE      = regexp.MustCompile(`<[^>]+>`)
	spaceRE    = regexp.MustCompile(`\s+`)
	outlineRE  = regexp.MustCompile(`(?s)<h[123][^>]*>.*?</h[123]>|<div class="chart" id="[^"]*"|<tr[ >].*?</tr>|<div class="check".*?</div>`)
	scriptRE   = regexp.MustCompile(`(?s)<script([^>]*)>(.*?)</script>`)
	cspRE      = regexp.MustCompile(`<meta http-equiv="Content-Security-Policy" content="([^"]*)">`)
	dataRE     = regexp.MustCompile(`(?s)<script type="application/json" id="allot-data">(.*?)</script>`)
	externalRE = regexp.MustCompile(`(?i)\s(src|href|srcset|action|poster|data)\s*=\s*"([^"#][^"]*)"|url\(|@import`)
)

func text(s string) string {
	return strings.TrimSpace(spaceRE.ReplaceAllString(tagRE.ReplaceAllString(s, " "), " "))
}

// outline is the page's structure as text: headings, chart containers,
// table rows and check entries, one per line. It is what the golden file
// holds, so a change to the page's structure shows as a readable diff.
func outline(page string) string {
	var b strings.Builder
	for _, m := range outlineRE.FindAllString(page, -1) {
		switch {
		case strings.HasPrefix(m, "<div class=\"chart\""):
			b.WriteString("[chart " + strings.TrimSuffix(strings.TrimPrefix(m, `<div class="chart" id="`), `"`) + "]\n")
		case strings.HasPrefix(m, "<h"):
			b.WriteString(m[1:3] + ": " + text(m) + "\n")
		case strings.HasPrefix(m, "<tr"):
			b.WriteString("  | " + text(strings.ReplaceAll(m, "</td>", " |</td>")) + "\n")
		default:
			b.WriteString("  check: " + text(m) + "\n")
		}
	}
	return b.String()
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *rewrite {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./report -run %s -rewrite to create it)", err, t.Name())
	}
	if got != string(want) {
		t.Errorf("%s differs from the page (run with -rewrite and review the diff):\n%s", path, diffLines(string(want), got))
	}
}

// diffLines lists the lines only in want (-) or only in got (+).
func diffLines(want, got string) string {
	in := func(s string) map[string]int {
		m := map[string]int{}
		for _, l := range strings.Split(s, "\n") {
			m[l]++
		}
		return m
	}
	w, g := in(want), in(got)
	var b strings.Builder
	for _, l := range strings.Split(want, "\n") {
		if g[l] == 0 {
			b.WriteString("- " + l + "\n")
		}
	}
	for _, l := range strings.Split(got, "\n") {
		if w[l] == 0 {
			b.WriteString("+ " + l + "\n")
		}
	}
	return b.String()
}

func TestOutlineGolden(t *testing.T) {
	golden(t, "fixture.outline", outline(render(t, fixtureResults(t))))
}

func TestPageIsSelfContained(t *testing.T) {
	page := render(t, fixtureResults(t))
	if m := externalRE.FindAllString(page, -1); len(m) > 0 {
		t.Errorf("page refers to something outside itself: %q", m)
	}
	csp := cspRE.FindAllStringSubmatch(page, -1)
	if len(csp) != 1 {
		t.Fatalf("want one Content-Security-Policy meta, found %d", len(csp))
	}
	csp[0][1] = html.UnescapeString(csp[0][1])
	if !strings.Contains(csp[0][1], "default-src 'none'") || strings.Contains(csp[0][1], "script-src 'unsafe-inline'") {
		t.Errorf("CSP does not forbid fetches or allows any inline script: %s", csp[0][1])
	}
	if strings.Index(page, "Content-Security-Policy") > strings.Index(page, "<script") {
		t.Error("the CSP must come before the first script to cover it")
	}
	// Every executable script is allowed by its hash; nothing else runs.
	executable := 0
	for _, m := range scriptRE.FindAllStringSubmatch(page, -1) {
		if strings.Contains(m[1], "application/json") {
			continue
		}
		executable++
		sum := sha256.Sum256([]byte(m[2]))
		hash := "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
		if !strings.Contains(csp[0][1], hash) {
			t.Errorf("script of %d bytes is not allowed by the CSP (hash %s)", len(m[2]), hash)
		}
	}
	if executable != 3 {
		t.Errorf("want 3 executable scripts (guard, uPlot, report), found %d", executable)
	}
}

func TestPageContent(t *testing.T) {
	f := fixtureResults(t)
	page := render(t, f)
	for _, want := range []string{
		`id="summary"`, `id="published"`, `id="throughput"`, `id="latency"`, `id="sweeps"`, `id="checks"`, `id="environment"`,
		"Published elsewhere, on other hardware",
		">3,400<", ">3,800<", ">14,900<", ">39,500<",
		`<div class="banner bad" id="failed-banner">1 of 20 runs did not pass`,
		`<span class="pill bad">check_failed</span>`,
		`<li>row (sku-1,w1,new,own) count -2 below zero</li>`,
		"… and 1 more",
		"Test CPU", "0123456789abcdef0123456789abcdef01234567", "2.50, 1.25, 0.50 — the machine was busy",
		"postgres test server 1.0, durability fsync",
		"uPlot " + uPlotVersion,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if n := strings.Count(page, `<tr data-run=`); n != len(f.Runs) {
		t.Errorf("comparison table has %d rows, want %d", n, len(f.Runs))
	}
	if n := strings.Count(page, `data-check="failed"`); n != 1 {
		t.Errorf("%d failed checks shown, want 1", n)
	}
	m := dataRE.FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no chart data block")
	}
	var cs chartSetJSON
	if err := json.Unmarshal([]byte(m[1]), &cs); err != nil {
		t.Fatalf("chart data is not JSON: %v", err)
	}
	// One chart per sweep point (4 workers, 2 rate) plus the runs outside
	// sweeps; two sweep curves (ops/s and p99) per swept parameter.
	if len(cs.Throughput) != 7 || len(cs.Spectrum) != 7 || len(cs.Sweeps) != 4 {
		t.Errorf("charts: %d throughput, %d spectrum, %d sweeps; want 7, 7, 4", len(cs.Throughput), len(cs.Spectrum), len(cs.Sweeps))
	}
	for _, c := range append(append(cs.Throughput, cs.Spectrum...), cs.Sweeps...) {
		if !strings.Contains(page, `id="`+c.ID+`" data-chart=`) {
			t.Errorf("chart %s has no container", c.ID)
		}
		for _, s := range c.Series {
			if len(s.Y) != len(c.X) {
				t.Errorf("chart %s series %q has %d points for %d x values", c.ID, s.Label, len(s.Y), len(c.X))
			}
		}
	}
	// The open-loop run draws response and service time.
	labels := map[string]bool{}
	for _, s := range cs.Spectrum[0].Series {
		labels[s.Label] = true
	}
	if !labels["embedded · open 5,000/s poisson (response)"] || !labels["embedded · open 5,000/s poisson (service)"] {
		t.Errorf("open-loop series missing from %v", labels)
	}
	// Sweep curves, parameters in name order: rate, then workers. Workers:
	// one series per store with a point at every value.
	workers := cs.Sweeps[2]
	if got := len(workers.Series); got != 3 || workers.ID != "sweep-1-ops" {
		t.Errorf("workers sweep %s has %d series, want 3 (one per store)", workers.ID, got)
	}
	for _, s := range workers.Series {
		for i, y := range s.Y {
			if y == nil {
				t.Errorf("sweep series %q has no point at workers=%v", s.Label, *workers.X[i])
			}
		}
	}
	// The rate sweep's p99 chart shows response (solid) and service time.
	var rateLabels []string
	for _, s := range cs.Sweeps[1].Series {
		rateLabels = append(rateLabels, s.Label)
	}
	if strings.Join(rateLabels, "|") != "embedded|embedded (service)" {
		t.Errorf("rate sweep p99 series = %q, want response and service", rateLabels)
	}
}

// hostileResults puts markup and script in every string the results file
// carries.
func hostileResults(t testing.TB) *bench.ResultsFile {
	const evil = `</script><script>document.title="pwned"</script><img src=x onerror=alert(1)><!--`
	f := fixtureResults(t)
	f.Command = []string{"allot", "bench", evil}
	f.Environment = json.RawMessage(`{"cpu_model":` + jsonString(evil) + `,"cores":2,"extra":` + jsonString(evil) + `}`)
	for i := range f.Runs[:3] {
		r := &f.Runs[i]
		r.Store = r.Store + evil
		r.Description = evil
		r.Error = evil
		r.ErrorSamples = []string{evil}
		r.Check.Violations = append(r.Check.Violations, evil)
		r.Workload.Name = evil
	}
	f.Runs[5].Sweep = &bench.SweepPoint{Param: "workers", Value: 16, Label: evil}
	return f
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestHostileStringsAreEscaped(t *testing.T) {
	page := render(t, hostileResults(t))
	for _, bad := range []string{`<script>document.title`, `<img src=x`, `<!--`} {
		if strings.Contains(page, bad) {
			t.Errorf("page contains unescaped %q", bad)
		}
	}
	if n := strings.Count(page, "<script"); n != 4 {
		t.Errorf("page has %d <script elements, want 4 (3 scripts and the data block)", n)
	}
	if m := dataRE.FindStringSubmatch(page); m == nil || !json.Valid([]byte(m[1])) {
		t.Error("chart data block is missing or not valid JSON")
	}
}

func TestWriteHTMLRejectsBadFiles(t *testing.T) {
	tests := []struct {
		name string
		f    *bench.ResultsFile
		want string
	}{
		{"nil", nil, "no results file"},
		{"no version", &bench.ResultsFile{Runs: []bench.Result{{Store: "memory"}}}, `no "version"`},
		{"newer", &bench.ResultsFile{Version: bench.ResultsVersion + 1, Runs: []bench.Result{{Store: "memory"}}}, "newer than this allot reads"},
		{"no runs", &bench.ResultsFile{Version: bench.ResultsVersion}, "holds no runs"},
		{"no store", &bench.ResultsFile{Version: bench.ResultsVersion, Runs: []bench.Result{{}}}, "run 1 has no store name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			err := WriteHTML(&buf, tt.f)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("WriteHTML error = %v, want one containing %q", err, tt.want)
			}
			if buf.Len() != 0 {
				t.Errorf("WriteHTML wrote %d bytes on error", buf.Len())
			}
		})
	}
}

func TestDecodeResults(t *testing.T) {
	good, err := json.Marshal(fixtureResults(t))
	if err != nil {
		t.Fatal(err)
	}
	if f, err := DecodeResults(bytes.NewReader(good)); err != nil || len(f.Runs) != 20 {
		t.Fatalf("DecodeResults(good) = %v runs, %v", f, err)
	}
	tests := []struct {
		name, in, want string
		notResults     bool
	}{
		{"truncated", "{\n  \"version\": 1,\n  \"runs\": [", "not valid JSON (line 3", false},
		{"garbage", "hello", "not valid JSON (line 1, column 2)", false},
		{"other JSON", `{"name": "x"}`, `no "version"`, true},
		{"wrong type", `{"version": "one"}`, `field "version" holds a JSON string`, true},
		{"empty runs", `{"version": 1, "runs": []}`, "holds no runs", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeResults(strings.NewReader(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want one containing %q", err, tt.want)
			}
			if errors.Is(err, ErrNotResults) != tt.notResults {
				t.Errorf("errors.Is(err, ErrNotResults) = %v, want %v", !tt.notResults, tt.notResults)
			}
		})
	}
	_, err = ReadResultsFile(filepath.Join(t.TempDir(), "missing.json"))
	if err == nil || !strings.Contains(err.Error(), "missing.json") || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ReadResultsFile(missing) = %v, want a not-exist error naming the file", err)
	}
}

func TestRunLabels(t *testing.T) {
	run := func(store string, workers int, durability string) bench.Result {
		return bench.Result{Store: store, Workers: workers, Durability: durability, Mode: "closed", Workload: bench.WorkloadInfo{Name: "hot"}}
	}
	tests := []struct {
		name string
		runs []bench.Result
		want []string
	}{
		{"stores only", []bench.Result{run("a", 4, "fsync"), run("b", 4, "fsync")}, []string{"a", "b"}},
		{"durability varies", []bench.Result{run("a", 4, "fsync"), run("a", 4, "none")}, []string{"a · fsync", "a · none"}},
		{"alike", []bench.Result{run("a", 4, "fsync"), run("a", 4, "fsync")}, []string{"a #1", "a #2"}},
		{"workers and durability", []bench.Result{run("a", 1, "fsync"), run("b", 4, "none")}, []string{"a · fsync · workers=1", "b · none · workers=4"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := runLabels(tt.runs, "")
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("runLabels = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestPublishedMatching(t *testing.T) {
	// A passing run's check passed (the bench writes "ok" only then).
	same := bench.Result{Store: "postgres", Status: bench.StatusOK, Workers: 16, Mode: "closed", Ops: 1_000_000, OpsPerSec: 3000,
		Workload: bench.WorkloadInfo{Name: "seed", Ops: 1_000_000}, Check: bench.CheckResult{OK: true}}
	faster := bench.Result{Store: "postgres", Status: bench.StatusOK, Workers: 64, Mode: "closed", Ops: 20_000, OpsPerSec: 9000,
		Workload: bench.WorkloadInfo{Name: "hot", Ops: 20_000}, Check: bench.CheckResult{OK: true}}
	broken := bench.Result{Store: "redis", Status: bench.StatusFailed, OpsPerSec: 1e9}
	runs := []bench.Result{faster, same, broken}
	v := newPublishedView(runs, runLabels(runs, ""))
	byName := map[string]publishedRow{}
	for _, r := range v.Rows {
		byName[r.Datastore] = r
	}
	pg := byName["PostgreSQL"]
	if !pg.HasMeasured || pg.Measured != "3,000" || !pg.Same {
		t.Errorf("PostgreSQL row = %+v, want the same-workload run (3,000 ops/s) preferred over a faster other one", pg)
	}
	if r := byName["Redis with Lua scripts"]; r.HasMeasured {
		t.Errorf("a failed run is shown as measured: %+v", r)
	}
	if r := byName["MySQL 5.7"]; r.HasMeasured || !r.HasPublished || r.Published != "3,400" {
		t.Errorf("MySQL row = %+v", r)
	}
	if len(v.Rows) != 4 {
		t.Errorf("%d rows, want the 4 published datastores and no others", len(v.Rows))
	}
}

func TestNumberFormats(t *testing.T) {
	for _, tt := range []struct {
		n    int64
		want string
	}{{0, "0"}, {999, "999"}, {1000, "1,000"}, {1234567, "1,234,567"}, {-1234, "-1,234"}} {
		if got := intText(tt.n); got != tt.want {
			t.Errorf("intText(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
	for _, tt := range []struct {
		ms   float64
		want string
	}{{0, "0"}, {0.01234, "0.0123"}, {1.5, "1.5"}, {12.34, "12.3"}, {1234.6, "1235"}} {
		if got := msText(tt.ms); got != tt.want {
			t.Errorf("msText(%v) = %q, want %q", tt.ms, got, tt.want)
		}
	}
}

// TestServerDownRun: a run that never started has no series or histogram;
// the page says why in red and draws the other runs.
func TestServerDownRun(t *testing.T) {
	f := fixtureResults(t)
	f.Runs = append(f.Runs[:2:2], bench.Result{Store: "tarantool", Status: bench.StatusServerDown, Workers: 16, Mode: "closed",
		Error: "store: server is not reachable: dial tcp 127.0.0.1:13301: connect: connection refused"})
	page := render(t, f)
	for _, want := range []string{
		`<span class="pill bad">server_down</span>`,
		`<div class="error-text">Error: store: server is not reachable: dial tcp 127.0.0.1:13301: connect: connection refused</div>`,
		`<span class="error-text">no run passed</span>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	var cs chartSetJSON
	if err := json.Unmarshal([]byte(dataRE.FindStringSubmatch(page)[1]), &cs); err != nil {
		t.Fatal(err)
	}
	if n := len(cs.Throughput[0].Series); n != 2 {
		t.Errorf("throughput chart has %d series, want the 2 runs that ran", n)
	}
	if n := len(cs.Spectrum[0].Series); n != 2 {
		t.Errorf("spectrum chart has %d series, want the 2 runs that ran", n)
	}
}
