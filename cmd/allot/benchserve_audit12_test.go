package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"allot/bench"
	"allot/benchsvc"
)

// parseRequest parses a /v1/runs body the way the service does.
func parseRequest(t *testing.T, body string) (benchsvc.Job, error) {
	t.Helper()
	args, err := benchsvc.Args([]byte(body))
	if err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	return parseServedBench(args)
}

// TestServedRunsAreBoundedAudit12: every workload a request over HTTP can
// reach has a bound on what it holds in memory, and a request past it is
// a bad request naming the field, the limit and the value, refused before
// anything is generated or run. Each of these was accepted: rw keeps a
// record per op for a WRITE and for a READ on a queue (a message
// published before the run), the cart workloads about 520 bytes per cart,
// search 58 per query and up to 20 results per sampled query, kv 16 per
// op, and every worker a 270 KB histogram (16384 workers: 4.4 GB).
func TestServedRunsAreBoundedAudit12(t *testing.T) {
	for _, tc := range []struct {
		body  string
		field string
		limit int
		value string
	}{
		{`{"workload":"rw","stores":["rabbitmq"],"request_type":"READ","ops":100000000}`, "ops", 1 << 24, "100000000"},
		{`{"workload":"rw","stores":["mysql"],"request_type":"WRITE","ops":1073741824}`, "ops", 1 << 24, "1073741824"},
		{`{"workload":"rw","stores":["rabbitmq"],"request_type":"WRITE","ops":16777217}`, "ops", 1 << 24, "16777217"},
		{`{"workload":"checkout","stores":["embedded"],"ops":50000000}`, "ops", 1 << 22, "50000000"},
		{`{"workload":"order","stores":["embedded"],"ops":4194305}`, "ops", 1 << 22, "4194305"},
		{`{"workload":"search","stores":["embedded"],"ops":100000000}`, "ops", 1 << 25, "100000000"},
		{`{"workload":"search","stores":["embedded"],"check_sample":100000000}`, "check-sample", 1 << 16, "100000000"},
		{`{"workload":"kv","stores":["redis"],"ops":2000000000}`, "ops", 1 << 26, "2000000000"},
		{`{"stores":["embedded"],"preset":"hot","ops":1000,"workers":16384}`, "workers", 1024, "16384"},
		{`{"workload":"rw","stores":["mysql"],"workers":2048}`, "workers", 1024, "2048"},
		{`{"stores":["embedded"],"preset":"hot","ops":1000,"sweep":"workers=1,4096"}`, "sweep", 1024, "4096"},
		{`{"stores":["embedded"],"preset":"hot","ops":1000,"pipeline":1048576}`, "pipeline", 1024, "1048576"},
		{`{"workload":"kv","stores":["redis"],"pipeline":100000}`, "pipeline", 1024, "100000"},
	} {
		_, err := parseRequest(t, tc.body)
		if !errors.Is(err, benchsvc.ErrBadRequest) {
			t.Errorf("%s: accepted (err %v), want a bad request naming %s", tc.body, err, tc.field)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, tc.field+":") || !strings.Contains(msg, strconv.Itoa(tc.limit)) || !strings.Contains(msg, tc.value) {
			t.Errorf("%s: %q: want the field %s, the limit %d and the value %s", tc.body, msg, tc.field, tc.limit, tc.value)
		}
	}
}

// TestServedRunsWithinBoundsAudit12: the bounds refuse only what holds
// memory: a READ on records holds nothing per op (gen-load sizes it by
// time, up to 2^30), and requests at the limits run.
func TestServedRunsWithinBoundsAudit12(t *testing.T) {
	for _, body := range []string{
		`{"workload":"rw","stores":["mysql"],"request_type":"READ","ops":1073741824,"duration":"10s"}`,
		`{"workload":"rw","stores":["mysql"],"request_type":"MODIFY_LOCKED","ops":1073741824,"duration":"10s"}`,
		`{"workload":"rw","stores":["rabbitmq"],"request_type":"READ","ops":16777216}`,
		`{"workload":"checkout","stores":["embedded"],"ops":4194304}`,
		`{"workload":"search","stores":["embedded"],"ops":33554432,"check_sample":65536}`,
		`{"workload":"kv","stores":["redis"],"ops":67108864,"pipeline":1024}`,
		`{"stores":["embedded"],"preset":"hot","ops":1000,"workers":1024,"pipeline":1024}`,
		`{"stores":["embedded"],"preset":"hot","ops":1000,"sweep":"workers=1,1024"}`,
	} {
		if _, err := parseRequest(t, body); err != nil {
			t.Errorf("%s: %v", body, err)
		}
	}
}

// TestEveryKindIsBoundedAudit12: a workload kind added later is bounded
// too (until its memory per op is measured, by the strictest bound).
func TestEveryKindIsBoundedAudit12(t *testing.T) {
	for _, k := range bench.Kinds() {
		body := fmt.Sprintf(`{"workload":%q,"ops":2147483647}`, k.Name)
		if _, err := parseRequest(t, body); !errors.Is(err, benchsvc.ErrBadRequest) || !strings.Contains(err.Error(), "2147483647") {
			t.Errorf("%s: %v, want a bad request naming the ops", body, err)
		}
	}
}

// TestGenLoadIsBoundedAudit12 sends gen-load requests to a service whose
// parser is the command's but never runs a job: a READ on a queue
// publishes threads x timeInMilis x 3 messages before the run (up to
// 1024 x 3,600,000 x 3, 11 billion, 265 GB of records), so it is refused
// past the bound naming the fields; a WRITE keeps every record it
// writes, so its time-sized ops are capped at the bound.
func TestGenLoadIsBoundedAudit12(t *testing.T) {
	var mu sync.Mutex
	var parsed [][]string
	parseOnly := func(args []string) (benchsvc.Job, error) {
		if _, err := parseServedBench(args); err != nil {
			return nil, err
		}
		mu.Lock()
		parsed = append(parsed, args)
		mu.Unlock()
		return nil, errors.New("audit12: parsed, never run")
	}
	svc, err := benchsvc.New(benchsvc.Config{Parse: parseOnly, GenLoadOps: genLoadOps, Resource: storeResource})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(svc.Handler())
	t.Cleanup(func() { svc.Close(); srv.Close() })

	code, m := postJSON(t, srv.URL+"/test/gen-load/rabbitmq", `{"threads":1024,"timeInMilis":3600000,"requestType":"READ"}`)
	detail, _ := m["detail"].(string)
	if code != http.StatusBadRequest {
		t.Errorf("READ on a queue, 1024 threads for an hour: %d %v, want 400", code, m)
	}
	for _, want := range []string{"threads", "timeInMilis", "16777216", "11059200000"} {
		if !strings.Contains(detail, want) {
			t.Errorf("READ on a queue: detail %q does not name %s", detail, want)
		}
	}
	// The seed's own body still runs.
	if code, m := postJSON(t, srv.URL+"/test/gen-load/rabbitmq", `{"threads":5,"timeInMilis":1000,"requestType":"READ"}`); code != http.StatusServiceUnavailable || !strings.Contains(fmt.Sprint(m["detail"]), "never run") {
		t.Errorf("the seed's READ: %d %v, want it parsed", code, m)
	}
	for _, store := range []string{"mysql", "rabbitmq"} {
		mu.Lock()
		parsed = nil
		mu.Unlock()
		body := `{"threads":1024,"timeInMilis":3600000,"requestType":"WRITE"}`
		if code, m := postJSON(t, srv.URL+"/test/gen-load/"+store, body); code != http.StatusServiceUnavailable {
			t.Errorf("WRITE on %s for an hour: %d %v, want it parsed", store, code, m)
			continue
		}
		mu.Lock()
		args := strings.Join(parsed[0], " ")
		mu.Unlock()
		if !strings.Contains(args, "--ops=16777216 ") {
			t.Errorf("WRITE on %s for an hour runs %s: want --ops capped at 16777216", store, args)
		}
	}
}

// TestBenchServeSecondInterruptAudit12 runs the built binary: a first
// SIGINT starts the graceful shutdown, which here waits for a request
// whose body never comes (5 s, the shutdown's bound); a second SIGINT
// ends the process at once, by the signal (a shell shows 130).
func TestBenchServeSecondInterruptAudit12(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "allot")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("building allot: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "bench", "serve", "--listen", "127.0.0.1:0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	next := func(what string) string {
		t.Helper()
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("waiting for %s: the process closed its standard error", what)
			}
			return l
		case <-time.After(20 * time.Second):
			t.Fatalf("waiting for %s: nothing in 20 s", what)
		}
		return ""
	}
	line := next("the listening line")
	_, addr, ok := strings.Cut(line, "listening on http://")
	if !ok {
		t.Fatalf("first line %q", line)
	}
	addr = strings.TrimSuffix(addr, "/")
	// A request whose body is promised but never sent keeps its handler,
	// and so the graceful shutdown, waiting.
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /v1/runs HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{", addr)
	time.Sleep(200 * time.Millisecond)

	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	// The service says it is stopping (the code before this fix said
	// nothing: go on after a while).
	wait := time.After(time.Second)
	for stopping := false; !stopping; {
		select {
		case l, open := <-lines:
			stopping = !open || strings.Contains(l, "interrupt again to exit at once")
		case <-wait:
			stopping = true
		}
	}
	second := time.Now()
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, conn)
	exited := make(chan error, 1)
	go func() {
		for range lines {
		}
		exited <- cmd.Wait()
	}()
	select {
	case err = <-exited:
	case <-time.After(10 * time.Second):
		t.Fatal("the process did not exit within 10 s of the second SIGINT")
	}
	took := time.Since(second)
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if took > 2*time.Second || !ws.Signaled() || ws.Signal() != syscall.SIGINT {
		t.Errorf("after the second SIGINT: exited after %v (%v, signaled %v), want at once, by SIGINT", took.Round(time.Millisecond), err, ws.Signaled())
	}
}
