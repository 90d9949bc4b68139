package benchsvc

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"allot/bench"
)

// fakeJob stands for a bench job: it reports progress every few
// milliseconds for --duration, then one result per store.
type fakeJob struct {
	stores   []string
	duration time.Duration
	fail     bool
	started  chan string // receives each store when the job starts, if set
}

var knownStores = map[string]bool{"embedded": true, "redis": true, "mysql": true, "mysql-myisam": true, "rabbitmq": true}

type fakeParser struct {
	maxDuration time.Duration // caps --duration when set (fuzzing)
	mu          sync.Mutex
	args        [][]string
	started     chan string
}

func (p *fakeParser) parse(args []string) (Job, error) {
	p.mu.Lock()
	p.args = append(p.args, args)
	p.mu.Unlock()
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	stores := fs.String("stores", "embedded", "")
	duration := fs.Duration("duration", 50*time.Millisecond, "")
	fail := fs.Bool("fail", false, "")
	fs.Int("ops", 0, "")
	fs.Int("workers", 0, "")
	fs.String("preset", "", "")
	fs.String("workload", "", "")
	fs.String("request-type", "", "")
	fs.Bool("transactional", false, "")
	fs.Bool("durable", false, "")
	fs.String("durability", "", "")
	fs.Int("batch", 0, "")
	fs.String("lock", "", "")
	if err := fs.Parse(args); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadRequest, err)
	}
	if p.maxDuration > 0 {
		*duration = min(*duration, p.maxDuration)
	}
	j := &fakeJob{duration: *duration, fail: *fail, started: p.started}
	for _, s := range strings.Split(*stores, ",") {
		if !knownStores[s] {
			return nil, fmt.Errorf("%w %q", ErrUnknownStore, s)
		}
		j.stores = append(j.stores, s)
	}
	return j, nil
}

func (j *fakeJob) Stores() []string { return j.stores }
func (j *fakeJob) StoreRuns() int   { return len(j.stores) }
func (j *fakeJob) Run(ctx context.Context, progress func(int, bench.Progress), result func(bench.Result)) (string, error) {
	if j.started != nil {
		for _, s := range j.stores {
			j.started <- s
		}
	}
	for i, s := range j.stores {
		start := time.Now()
		var done int64
		for time.Since(start) < j.duration {
			select {
			case <-ctx.Done():
				return "", ctx.Err()
			case <-time.After(5 * time.Millisecond):
			}
			done += 100
			progress(i, bench.Progress{Store: s, Done: done, Total: 1 << 40, P99: 2 * time.Millisecond, Errors: 1})
		}
		result(bench.Result{Store: s, Status: bench.StatusOK, Ops: done, Seconds: time.Since(start).Seconds(), OpsPerSec: float64(done) / time.Since(start).Seconds()})
	}
	if j.fail {
		return "table", errors.New("1 of 1 runs failed")
	}
	return "table", nil
}

func newTestService(t *testing.T, cfg Config) (*Service, *httptest.Server, *fakeParser) {
	t.Helper()
	p := &fakeParser{}
	if cfg.Parse == nil {
		cfg.Parse = p.parse
	}
	if cfg.EventInterval == 0 {
		cfg.EventInterval = 20 * time.Millisecond
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(func() { s.Close(); srv.Close() })
	return s, srv, p
}

func do(t *testing.T, method, url, body string, hdr ...string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			req.Host = hdr[i+1]
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	data, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(data, &m); err != nil && resp.Header.Get("Content-Type") == "application/json" {
		t.Fatalf("%s %s: reply is not JSON: %s", method, url, data)
	}
	return resp.StatusCode, m
}

func waitState(t *testing.T, s *Service, id string) Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rec, err := s.Wait(ctx, id)
	if err != nil {
		t.Fatalf("run %s did not finish: %v", id, err)
	}
	return rec
}

func TestRunLifecycle(t *testing.T) {
	s, srv, p := newTestService(t, Config{})
	code, m := do(t, "POST", srv.URL+"/v1/runs", `{"stores":["embedded"],"workload":"ims","preset":"hot","ops":50000,"workers":8,"duration":"200ms"}`)
	if code != http.StatusAccepted || m["id"] == nil {
		t.Fatalf("POST /v1/runs: %d %v", code, m)
	}
	id := m["id"].(string)
	want := "--duration=200ms --ops=50000 --preset=hot --stores=embedded --workers=8 --workload=ims"
	if got := strings.Join(p.args[0], " "); got != want {
		t.Errorf("args %q, want %q", got, want)
	}
	rec := waitState(t, s, id)
	if rec.State != StateDone || len(rec.Results) != 1 || rec.Results[0].Ops == 0 || rec.Progress.Fraction != 1 {
		t.Fatalf("finished run: %+v", rec)
	}
	if len(rec.Series) < 2 {
		t.Errorf("%d live samples over 200 ms at one per 20 ms", len(rec.Series))
	}
	code, m = do(t, "GET", srv.URL+"/v1/runs/"+id, "")
	if code != 200 || m["state"] != "done" || len(m["results"].([]any)) != 1 {
		t.Errorf("GET run: %d %v", code, m)
	}
	code, m = do(t, "GET", srv.URL+"/v1/runs", "")
	if code != 200 || len(m["runs"].([]any)) != 1 {
		t.Errorf("GET runs: %d %v", code, m)
	}
	code, _ = do(t, "DELETE", srv.URL+"/v1/runs/"+id, "")
	if code != http.StatusConflict {
		t.Errorf("DELETE of a finished run: %d, want 409", code)
	}
	code, _ = do(t, "GET", srv.URL+"/v1/runs/nope", "")
	if code != http.StatusNotFound {
		t.Errorf("GET unknown run: %d", code)
	}
}

func TestFailedJobIsFailed(t *testing.T) {
	s, srv, _ := newTestService(t, Config{})
	_, m := do(t, "POST", srv.URL+"/v1/runs", `{"fail":true}`)
	rec := waitState(t, s, m["id"].(string))
	if rec.State != StateFailed || rec.Error == "" || len(rec.Results) != 1 {
		t.Errorf("a job that failed: %+v", rec)
	}
}

func TestBadRequests(t *testing.T) {
	_, srv, _ := newTestService(t, Config{})
	for _, tc := range []struct {
		body string
		code int
		want string
	}{
		{`{"stores":["nope"]}`, 404, "unknown store"},
		{`{"workers":"x"}`, 400, "workers"},
		{`{"no_such_flag":1}`, 400, "no-such-flag"},
		{`[1,2]`, 400, "JSON object"},
		{`{"ops":5`, 400, "JSON object"},
		{``, 400, "JSON object"},
		{`{"out":"/etc/passwd"}`, 400, "names a file"},
		{`{"stores":["a,b"]}`, 400, "comma"},
		{`{"stores":[]}`, 400, "empty list"},
		{`{"ops":null}`, 400, "null"},
		{`{"preset":{"a":1}}`, 400, "parameter value"},
		{`{"Stores":["embedded"]}`, 400, "parameter name"},
		{`{"workers":1,"workers":2}`, 202, ""},
		{`{"retry_delay":"1ms","retry-delay":"2ms"}`, 400, "same parameter"},
	} {
		code, m := do(t, "POST", srv.URL+"/v1/runs", tc.body)
		if code != tc.code {
			t.Errorf("%s: %d %v, want %d", tc.body, code, m, tc.code)
			continue
		}
		if tc.want != "" && !strings.Contains(fmt.Sprint(m["detail"]), tc.want) {
			t.Errorf("%s: detail %q does not say %q", tc.body, m["detail"], tc.want)
		}
	}
}

func TestRunsQueuePerStore(t *testing.T) {
	s, srv, p := newTestService(t, Config{})
	p.started = make(chan string, 10)
	_, a := do(t, "POST", srv.URL+"/v1/runs", `{"stores":["embedded"],"duration":"1h"}`)
	_, b := do(t, "POST", srv.URL+"/v1/runs", `{"stores":["embedded","redis"],"duration":"10ms"}`)
	_, c := do(t, "POST", srv.URL+"/v1/runs", `{"stores":["redis"],"duration":"10ms"}`)
	_, d := do(t, "POST", srv.URL+"/v1/runs", `{"stores":["mysql"],"duration":"10ms"}`)
	// b waits for a (embedded); c waits for b, which claimed redis first;
	// d shares nothing and runs at once.
	recD := waitState(t, s, d["id"].(string))
	recB, _ := s.Get(b["id"].(string))
	recC, _ := s.Get(c["id"].(string))
	if recB.State != StateQueued || recC.State != StateQueued {
		t.Errorf("while a runs on embedded: b %s, c %s; want both queued", recB.State, recC.State)
	}
	// a would run for an hour: cancel it, and the queue moves on.
	if code, _ := do(t, "DELETE", srv.URL+"/v1/runs/"+a["id"].(string), ""); code != http.StatusAccepted {
		t.Fatalf("cancelling a: %d", code)
	}
	recA := waitState(t, s, a["id"].(string))
	recB = waitState(t, s, b["id"].(string))
	recC = waitState(t, s, c["id"].(string))
	if !recB.Started.After(*recA.Finished) && !recB.Started.Equal(*recA.Finished) {
		t.Errorf("b started %v before a finished %v", recB.Started, recA.Finished)
	}
	if recC.Started.Before(*recB.Finished) {
		t.Errorf("c overtook b: started %v, b finished %v", recC.Started, recB.Finished)
	}
	if recD.Started.After(*recA.Finished) {
		t.Error("d, on another store, waited for a")
	}
	if !slices.Contains(recA.Concurrent, recD.ID) || !slices.Contains(recD.Concurrent, recA.ID) {
		t.Errorf("a and d ran at once but do not say so: %v, %v", recA.Concurrent, recD.Concurrent)
	}
	if slices.Contains(recA.Concurrent, recB.ID) {
		t.Errorf("a and b did not run at once, yet a names b: %v", recA.Concurrent)
	}
}

// TestRunsQueuePerServer: two stores on one server (mysql, mysql-myisam)
// are one resource; a run on one waits for a run on the other.
func TestRunsQueuePerServer(t *testing.T) {
	s, srv, _ := newTestService(t, Config{Resource: func(store string) string {
		if strings.HasPrefix(store, "mysql") {
			return "mariadb"
		}
		return store
	}})
	_, a := do(t, "POST", srv.URL+"/v1/runs", `{"stores":["mysql"],"duration":"1h"}`)
	_, b := do(t, "POST", srv.URL+"/v1/runs", `{"stores":["mysql-myisam"],"duration":"10ms"}`)
	time.Sleep(30 * time.Millisecond)
	recB, _ := s.Get(b["id"].(string))
	if recB.State != StateQueued {
		t.Errorf("a run on mysql-myisam while mysql runs: %s, want queued", recB.State)
	}
	do(t, "DELETE", srv.URL+"/v1/runs/"+a["id"].(string), "")
	recA := waitState(t, s, a["id"].(string))
	recB = waitState(t, s, b["id"].(string))
	if recB.Started.Before(*recA.Finished) {
		t.Errorf("b started %v before a finished %v", recB.Started, recA.Finished)
	}
}

func TestCancel(t *testing.T) {
	s, srv, _ := newTestService(t, Config{})
	_, a := do(t, "POST", srv.URL+"/v1/runs", `{"duration":"1h"}`)
	_, b := do(t, "POST", srv.URL+"/v1/runs", `{"duration":"1h"}`)
	code, m := do(t, "DELETE", srv.URL+"/v1/runs/"+b["id"].(string), "")
	if code != http.StatusAccepted || m["state"] != StateCancelled {
		t.Errorf("cancelling a queued run: %d %v", code, m)
	}
	time.Sleep(50 * time.Millisecond)
	code, _ = do(t, "DELETE", srv.URL+"/v1/runs/"+a["id"].(string), "")
	if code != http.StatusAccepted {
		t.Errorf("cancelling a running run: %d", code)
	}
	rec := waitState(t, s, a["id"].(string))
	if rec.State != StateCancelled {
		t.Errorf("cancelled run ended %s", rec.State)
	}
}

func TestEventsStream(t *testing.T) {
	_, srv, _ := newTestService(t, Config{})
	_, m := do(t, "POST", srv.URL+"/v1/runs", `{"duration":"300ms"}`)
	resp, err := http.Get(srv.URL + "/v1/runs/" + m["id"].(string) + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("content type %q", ct)
	}
	samples, ended := 0, false
	sc := bufio.NewScanner(resp.Body)
	event := ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			event = line[7:]
		case strings.HasPrefix(line, "data: "):
			var ev map[string]any
			if err := json.Unmarshal([]byte(line[6:]), &ev); err != nil {
				t.Fatalf("event data is not JSON: %s", line)
			}
			if event == "sample" {
				samples++
				for _, k := range []string{"ops_per_sec", "p99_ms", "errors", "t"} {
					if _, ok := ev[k]; !ok {
						t.Errorf("sample lacks %s: %v", k, ev)
					}
				}
			}
			if event == "end" {
				ended = ev["state"] == StateDone
			}
		}
	}
	if samples < 2 || !ended {
		t.Errorf("%d samples, ended done %v", samples, ended)
	}
}

func TestToken(t *testing.T) {
	_, srv, _ := newTestService(t, Config{Token: "s3cret"})
	if code, _ := do(t, "GET", srv.URL+"/v1/runs", ""); code != http.StatusUnauthorized {
		t.Errorf("no token: %d", code)
	}
	if code, _ := do(t, "GET", srv.URL+"/v1/runs", "", "Authorization", "Bearer wrong"); code != http.StatusUnauthorized {
		t.Errorf("wrong token: %d", code)
	}
	if code, _ := do(t, "GET", srv.URL+"/v1/runs", "", "Authorization", "Bearer s3cret"); code != http.StatusOK {
		t.Errorf("right token: %d", code)
	}
	if code, _ := do(t, "GET", srv.URL+"/v1/runs", "", "Authorization", "bearer s3cret"); code != http.StatusOK {
		t.Errorf("right token, scheme in lower case: %d", code)
	}
	if code, _ := do(t, "GET", srv.URL+"/v1/runs", "", "Authorization", "Bearer S3CRET"); code != http.StatusUnauthorized {
		t.Errorf("token in another case: %d", code)
	}
	if code, _ := do(t, "GET", srv.URL+"/v1/runs", "", "Cookie", "allot_bench_token=s3cret"); code != http.StatusOK {
		t.Errorf("token cookie: %d", code)
	}
	if code, _ := do(t, "GET", srv.URL+"/v1/runs", "", "Cookie", "allot_bench_token=wrong"); code != http.StatusUnauthorized {
		t.Errorf("wrong token cookie: %d", code)
	}
	if code, _ := do(t, "POST", srv.URL+"/test/gen-load/embedded", `{}`); code != http.StatusUnauthorized {
		t.Errorf("gen-load without token: %d", code)
	}
	resp, err := http.Get(srv.URL + "/")
	if err != nil || resp.StatusCode != 200 {
		t.Errorf("the page needs no token (it asks for it): %v %v", resp.StatusCode, err)
	}
}

func TestCheckListen(t *testing.T) {
	for _, tc := range []struct {
		addr, token string
		ok          bool
	}{
		{"127.0.0.1:7390", "", true}, {"[::1]:7390", "", true}, {"localhost:7390", "", true},
		{"0.0.0.0:7390", "", false}, {":7390", "", false}, {"10.0.0.1:7390", "", false},
		{"0.0.0.0:7390", "t", true}, {"nonsense", "", false},
	} {
		if err := CheckListen(tc.addr, tc.token); (err == nil) != tc.ok {
			t.Errorf("CheckListen(%q, %q) = %v", tc.addr, tc.token, err)
		}
	}
}

func TestHistorySurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	p := &fakeParser{}
	s1, err := New(Config{Parse: p.parse, DataDir: dir, EventInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	done, _ := s1.Submit(json.RawMessage(`{}`), []string{"--duration=20ms"})
	waitState(t, s1, done.ID)
	running, _ := s1.Submit(json.RawMessage(`{}`), []string{"--duration=1h"})
	time.Sleep(30 * time.Millisecond)
	// A crash: the record on disk still says running. Close would mark it
	// failed itself, and s1 holds its directory: read a copy of it as a
	// new process would, first.
	crashed := t.TempDir()
	names, _ := filepath.Glob(filepath.Join(dir, "run-*.json"))
	for _, name := range names {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(crashed, filepath.Base(name)), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s2, err := New(Config{Parse: p.parse, DataDir: crashed})
	if err != nil {
		t.Fatal(err)
	}
	page, err := s2.List("", listLimitDefault)
	if err != nil {
		t.Fatal(err)
	}
	list := page.Runs
	if len(list) != 2 || list[1].ID != done.ID || list[1].State != StateDone || len(list[1].Results) != 1 {
		t.Fatalf("history after restart: %+v", list)
	}
	if list[0].ID != running.ID || list[0].State != StateFailed || !strings.Contains(list[0].Error, "stopped") {
		t.Errorf("a run in flight at the restart: %+v", list[0])
	}
	s1.Close()
	s2.Close()
}

func TestReport(t *testing.T) {
	s, srv, _ := newTestService(t, Config{})
	_, m := do(t, "POST", srv.URL+"/v1/runs", `{"duration":"30ms"}`)
	id := m["id"].(string)
	waitState(t, s, id)
	// The fake results carry no histograms: report.Validate may refuse
	// them, but the endpoint must answer, not crash.
	resp, err := http.Get(srv.URL + "/v1/runs/" + id + "/report")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 && resp.StatusCode != 500 {
		t.Errorf("report: %d", resp.StatusCode)
	}
	if code, _ := do(t, "GET", srv.URL+"/v1/report?runs="+id+",nope", ""); code != 404 {
		t.Errorf("report of an unknown run: %d", code)
	}
}
