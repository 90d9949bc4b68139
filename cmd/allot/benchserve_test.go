package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"allot/bench"
	"allot/benchsvc"
	"allot/internal/cdp"
)

func newTestBenchService(t *testing.T) (*benchsvc.Service, *httptest.Server) {
	t.Helper()
	svc, err := newBenchService(context.Background(), benchsvc.Config{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(svc.Handler())
	t.Cleanup(func() { svc.Close(); srv.Close() })
	return svc, srv
}

func postJSON(t *testing.T, url, body string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m
}

// TestBenchServeRunsTheCLIJob runs a small job over HTTP through the
// command line's own parser and checks that the result is the CLI's JSON
// object, resource figures included (100,000 ops: CPU time is counted in
// 10 ms ticks, which a shorter run may not reach).
func TestBenchServeRunsTheCLIJob(t *testing.T) {
	svc, srv := newTestBenchService(t)
	code, m := postJSON(t, srv.URL+"/v1/runs", `{"stores":["embedded"],"preset":"hot","ops":100000,"workers":4,"durability":"write"}`)
	if code != http.StatusAccepted {
		t.Fatalf("POST /v1/runs: %d %v", code, m)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rec, err := svc.Wait(ctx, m["id"].(string))
	if err != nil {
		t.Fatal(err)
	}
	if rec.State != benchsvc.StateDone || len(rec.Results) != 1 {
		t.Fatalf("run: %s %s, %d results\n%s", rec.State, rec.Error, len(rec.Results), rec.Table)
	}
	r := rec.Results[0]
	if r.Store != "embedded" || r.Workload.Name != "hot" || r.Ops != 100000 || !r.Check.OK || r.Workers != 4 {
		t.Errorf("result: %+v", r)
	}
	if r.Server == nil || !r.Server.InProcess || r.Server.CPUSeconds <= 0 || r.Server.RSSPeakBytes <= 0 {
		t.Errorf("resource figures: %+v", r.Server)
	}
	if !strings.Contains(rec.Table, "check: OK") || !strings.Contains(rec.Table, "cpu µs/op") {
		t.Errorf("table:\n%s", rec.Table)
	}
	for body, want := range map[string]int{
		`{"stores":["no-such-store"]}`:    http.StatusNotFound,
		`{"workers":0}`:                   http.StatusBadRequest,
		`{"no_such_flag":true}`:           http.StatusBadRequest,
		`{"workload":"no-such-workload"}`: http.StatusBadRequest,
		`{"help":true}`:                   http.StatusBadRequest,
		`{"preset":"nope"}`:               http.StatusBadRequest,
	} {
		if code, m := postJSON(t, srv.URL+"/v1/runs", body); code != want {
			t.Errorf("%s: %d %v, want %d", body, code, m, want)
		}
	}
	// A workload the service would generate in memory past servedOpsMax is
	// refused before it starts: 2^28 ops took the machine's memory (past
	// 14 GB), and neither DELETE nor SIGTERM stopped the generation. So is
	// an open loop whose rate x duration comes to as many.
	for _, body := range []string{
		`{"stores":["memory"],"preset":"hot","ops":268435456}`,
		`{"stores":["memory"],"preset":"hot","rate":1000000,"duration":"60s"}`,
	} {
		code, m := postJSON(t, srv.URL+"/v1/runs", body)
		if detail, _ := m["detail"].(string); code != http.StatusBadRequest || !strings.Contains(detail, "at most 33554432 ops") {
			t.Errorf("%s: %d %v, want 400 naming the limit", body, code, m)
		}
	}
}

// TestGenLoadSeedBody answers the seed bench's exact body on the embedded
// store (the peers' servers are exercised by the integration runs).
func TestGenLoadSeedBody(t *testing.T) {
	_, srv := newTestBenchService(t)
	code, m := postJSON(t, srv.URL+"/test/gen-load/embedded", `{"threads":5,"load":1,"timeInMilis":1000,"transactional":false,"durable":true,"requestType":"READ"}`)
	if code != http.StatusOK {
		t.Fatalf("gen-load: %d %v", code, m)
	}
	count, _ := m["count"].(float64)
	timeMs, _ := m["timeMs"].(float64)
	if count < 100 || timeMs < 900 || timeMs > 3000 || m["state"] != benchsvc.StateDone {
		t.Errorf("reply %v: want a count of reads over about 1000 ms", m)
	}
}

// TestGenLoadSeedBodyOnPeers sends the seed's exact curl body to the
// stores the seed measured: MySQL InnoDB and MyISAM (MariaDB here) and
// RabbitMQ. Their servers come from `allot services up`; without them the
// test skips, except under CI=true, where it fails.
func TestGenLoadSeedBodyOnPeers(t *testing.T) {
	_, srv := newTestBenchService(t)
	const body = `{"threads":5,"load":1,"timeInMilis":1000,"transactional":false,"durable":true,"requestType":"READ"}`
	g, err := benchsvc.ParseGenLoad([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"mysql", "mysql-myisam", "rabbitmq"} {
		code, m := postJSON(t, srv.URL+"/test/gen-load/"+name, body)
		if code != http.StatusOK {
			if strings.Contains(fmt.Sprint(m["error"]), "not reachable") && os.Getenv("CI") != "true" {
				t.Skipf("%s: %v (run allot services up)", name, m["error"])
			}
			t.Errorf("%s: %d %v", name, code, m)
			continue
		}
		count, _ := m["count"].(float64)
		timeMs, _ := m["timeMs"].(float64)
		// A run that reached its op bound (genLoadOps) ends before the
		// time: a queue's READ consumes the messages published before the
		// run, and a fast machine drains them.
		drained := count == float64(genLoadOps(name, g))
		if count < 10 || (timeMs < 900 && !drained) || timeMs > 5000 {
			t.Errorf("%s: reply %v", name, m)
		}
		t.Logf("%s: %v (drained before the time: %v)", name, m, drained)
	}
}

func chromiumBin(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is not installed (scripts/test installs it)")
	}
	t.Skip("chromium is not installed (scripts/test installs it)")
	return ""
}

// TestBenchServePageInChromium opens the page in a real headless
// Chromium, starts a run against the embedded store from the form, sees
// the live throughput chart draw samples as they stream in, sees the
// finished run in the history, compares it with a second run and opens
// its report. ALLOT_BENCH_SERVE_SHOT=docs/bench-serve.png keeps the
// screenshot.
func TestBenchServePageInChromium(t *testing.T) {
	bin := chromiumBin(t)
	svc, srv := newTestBenchService(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	b, err := cdp.Launch(ctx, bin, t.TempDir(), 1280, 1400)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.Navigate(ctx, srv.URL+"/"); err != nil {
		t.Fatal(err)
	}
	if err := b.WaitFor(ctx, "the page to load", `document.documentElement.dataset.ready === "true"`); err != nil {
		t.Fatal(err)
	}
	// Fill the form as a user would and press Start: an open-loop run of
	// 4 s, so that the one-a-second samples have time to arrive.
	fill := `(function () {
		var set = function (id, v) { var e = document.getElementById(id); e.value = v; e.dispatchEvent(new Event("input")); };
		Array.prototype.forEach.call(document.getElementById("f-stores").options, function (o) { o.selected = o.value === "embedded"; });
		document.getElementById("f-workload").value = "ims";
		set("f-preset", "hot"); set("f-ops", ""); set("f-workers", "4"); set("f-durability", "write");
		set("f-duration", "4s"); set("f-rate", "3000");
		document.getElementById("f-submit").click();
		return true;
	})()`
	if err := b.Eval(ctx, fill, nil); err != nil {
		t.Fatal(err)
	}
	if err := b.WaitFor(ctx, "the run to start", `document.documentElement.dataset.liveRun`); err != nil {
		var formErr string
		b.Eval(ctx, `document.getElementById("form-error").textContent`, &formErr)
		t.Fatalf("%v; form says %q", err, formErr)
	}
	var id string
	b.Eval(ctx, `document.documentElement.dataset.liveRun`, &id)
	// The live chart: two samples streamed in while the run goes on, and
	// the canvas holds the throughput line's blue.
	if err := b.WaitFor(ctx, "two live samples", `Number(document.documentElement.dataset.livePoints) >= 2`); err != nil {
		t.Fatal(err)
	}
	var state string
	b.Eval(ctx, `document.documentElement.dataset.liveState`, &state)
	rec, _ := svc.Get(id)
	if rec.State != benchsvc.StateRunning || state != "running" {
		t.Errorf("the samples arrived when the run was %s (page: %s), not while it ran", rec.State, state)
	}
	bluePixels := `(function () {
		var c = document.querySelector("#chart-ops canvas"); if (!c) return -1;
		var d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data, n = 0;
		for (var i = 0; i < d.length; i += 4) if (d[i+3] > 0 && d[i+2] > 150 && d[i] < 120) n++;
		return n; })()`
	var blue int
	if err := b.Eval(ctx, bluePixels, &blue); err != nil || blue < 50 {
		t.Errorf("the live throughput chart has %d blue pixels (%v): the line is not drawn", blue, err)
	}
	// The finished run in the history.
	if err := b.WaitFor(ctx, "the run to finish in the history", `document.querySelector('#history-table tr[data-id="`+id+`"][data-state="done"]')`); err != nil {
		rec, _ := svc.Get(id)
		t.Fatalf("%v; run %s %s\n%s", err, rec.State, rec.Error, rec.Table)
	}
	var row string
	b.Eval(ctx, `document.querySelector('#history-table tr[data-id="`+id+`"]').textContent`, &row)
	rec, _ = svc.Get(id)
	if len(rec.Results) != 1 || !strings.Contains(row, "embedded") || rec.Results[0].OpsPerSec <= 0 {
		t.Errorf("history row %q, results %+v", row, rec.Results)
	}
	// A second, short run, then the compare view of the two.
	code, m := postJSON(t, srv.URL+"/v1/runs", `{"stores":["embedded"],"preset":"hot","ops":3000,"workers":8,"durability":"write"}`)
	if code != http.StatusAccepted {
		t.Fatalf("second run: %d %v", code, m)
	}
	id2 := m["id"].(string)
	if _, err := svc.Wait(ctx, id2); err != nil {
		t.Fatal(err)
	}
	if err := b.WaitFor(ctx, "the second run in the history", `document.querySelector('#history-table tr[data-id="`+id2+`"][data-state="done"]')`); err != nil {
		t.Fatal(err)
	}
	compare := `(function () {
		["` + id + `", "` + id2 + `"].forEach(function (id) {
			var box = document.querySelector('#history-table tr[data-id="' + id + '"] input'); box.checked = true; box.dispatchEvent(new Event("change"));
		});
		document.getElementById("compare").click(); return true; })()`
	if err := b.Eval(ctx, compare, nil); err != nil {
		t.Fatal(err)
	}
	if err := b.WaitFor(ctx, "the compare view", `document.documentElement.dataset.compared && document.querySelectorAll("#compare-table tr").length >= 8`); err != nil {
		t.Fatal(err)
	}
	// The first run's report, in the page's frame.
	if err := b.Eval(ctx, `document.querySelector('#history-table tr[data-id="`+id+`"] button').click(), true`, nil); err != nil {
		t.Fatal(err)
	}
	if err := b.WaitFor(ctx, "the report in its frame", `(function () { var d = document.getElementById("report-frame").contentDocument; return d && d.querySelector("#comparison") && d.documentElement.getAttribute("data-ready") === "true"; })()`); err != nil {
		t.Fatal(err)
	}
	var jsErrors string
	b.Eval(ctx, `document.documentElement.dataset.jsErrors`, &jsErrors)
	if jsErrors != "0" {
		t.Errorf("%s script errors on the page", jsErrors)
	}
	b.Eval(ctx, `document.getElementById("report").hidden = true, window.scrollTo(0, 0), true`, nil)
	shot, err := b.Screenshot(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil || img.Bounds().Dx() != 1280 {
		t.Fatalf("screenshot: %v %v", err, img.Bounds())
	}
	path := os.Getenv("ALLOT_BENCH_SERVE_SHOT")
	if path == "" {
		path = filepath.Join(t.TempDir(), "bench-serve.png")
	}
	if err := os.WriteFile(path, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}

// TestServerCostOnPeers runs the bench command on every peer server and
// checks that each result carries its server's resource figures: a pid
// that is the server's (the adapters check the process name), CPU time
// spent, memory, and for PostgreSQL more than one process (the backends
// are the postmaster's children, and they do the work). Servers come from
// `allot services up`; one that is down is skipped, except under CI=true.
func TestServerCostOnPeers(t *testing.T) {
	// The allot store starts `allot serve`: this package's binary.
	bin := filepath.Join(t.TempDir(), "allot")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("building allot: %v\n%s", err, out)
	}
	t.Setenv("ALLOT_BIN", bin)
	for _, tc := range []struct {
		store string
		args  []string
	}{
		{"allot", []string{"--preset", "hot", "--ops", "2000", "--workers", "4"}},
		{"postgres", []string{"--preset", "hot", "--ops", "2000", "--workers", "4"}},
		{"mysql", []string{"--preset", "hot", "--ops", "2000", "--workers", "4"}},
		{"redis", []string{"--preset", "hot", "--ops", "2000", "--workers", "4"}},
		{"tarantool", []string{"--preset", "hot", "--ops", "2000", "--workers", "4"}},
		{"rabbitmq", []string{"--workload", "rw", "--request-type", "WRITE", "--ops", "1000", "--workers", "4"}},
	} {
		name := tc.store
		var out bytes.Buffer
		j, err := parseBench(append([]string{"--quiet", "--store", name}, tc.args...), &out, &out)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		j.stdout, j.stderr = &out, &out
		var results []bench.Result
		j.onResult = func(r *bench.Result) { results = append(results, *r) }
		// A server that stops answering (the machine is shared) fails
		// this store, not the whole package's tests.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		err = j.run(ctx)
		cancel()
		if len(results) != 1 {
			t.Errorf("%s: %d results: %v\n%s", name, len(results), err, out.String())
			continue
		}
		r := results[0]
		if r.Status == bench.StatusServerDown && os.Getenv("CI") != "true" {
			t.Logf("%s: server down, skipped (run allot services up)", name)
			continue
		}
		u := r.Server
		if u == nil {
			t.Errorf("%s: no server figures (status %v, error %v)", name, r.Status, r.Error)
			continue
		}
		if u.PID <= 0 || u.CPUSeconds <= 0 || u.RSSPeakBytes <= 0 || u.InProcess {
			t.Errorf("%s: server figures %+v", name, u)
		}
		if name == "postgres" && u.Processes < 2 {
			t.Errorf("postgres: %d processes measured: the backends are missing", u.Processes)
		}
		t.Logf("%s: %.0f ops/s, %.1f µs CPU per op, %.0f MB, %d processes", name, r.OpsPerSec, u.CPUMicrosPerOp, float64(u.RSSPeakBytes)/(1<<20), u.Processes)
	}
}
