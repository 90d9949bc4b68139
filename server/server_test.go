package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"allot/client"
	"allot/engine"
	"allot/inventory"
	"allot/server"
	"allot/server/servertest"
)

func TestConfigValidate(t *testing.T) {
	cases := []struct {
		cfg  server.Config
		want string // "" = valid
	}{
		{server.Config{RESPAddr: "127.0.0.1:0"}, ""},
		{server.Config{RESPAddr: "localhost:7379", HTTPAddr: "[::1]:7380"}, ""},
		{server.Config{RESPAddr: "0.0.0.0:7379"}, "server: RESP address 0.0.0.0:7379 is not loopback: set a password (--requirepass) or allow it without one (--insecure)"},
		{server.Config{HTTPAddr: ":7380"}, "server: HTTP address :7380 is not loopback: set a password (--requirepass) or allow it without one (--insecure)"},
		{server.Config{RESPAddr: "db.example:7379"}, "server: RESP address db.example:7379 is not loopback: set a password (--requirepass) or allow it without one (--insecure)"},
		{server.Config{RESPAddr: "0.0.0.0:7379", Password: "x"}, ""},
		{server.Config{RESPAddr: "0.0.0.0:7379", Insecure: true}, ""},
		{server.Config{}, "server: neither a RESP nor an HTTP address is set"},
		{server.Config{RESPAddr: "nonsense"}, `server: RESP address "nonsense": address nonsense: missing port in address`},
		{server.Config{RESPAddr: "127.0.0.1:0", ArgsMax: 3}, "server: resp: args max must be at least 9 (STOCK.SET ... ID <key>, the longest command of fixed length, has 9), got 3"},
		{server.Config{RESPAddr: "127.0.0.1:0", ConnectionsMax: -1}, "server: connections max must be positive, got -1"},
		{server.Config{RESPAddr: "127.0.0.1:0", Password: "a\nb"}, "server: the password must not contain CR or LF"},
		{server.Config{RESPAddr: "127.0.0.1:0", RESPIO: "threads"}, `server: RESP I/O "threads": want "loop" or "goroutine"`},
		{server.Config{RESPAddr: "127.0.0.1:0", RESPIO: server.RESPIOGoroutine}, ""},
	}
	if runtime.GOOS == "linux" {
		cases = append(cases, struct {
			cfg  server.Config
			want string
		}{server.Config{RESPAddr: "127.0.0.1:0", RESPIO: server.RESPIOLoop}, ""})
	}
	def := server.Config{RESPAddr: "127.0.0.1:0"}
	if err := def.Validate(); err != nil || runtime.GOOS == "linux" && def.RESPIO != server.RESPIOLoop || runtime.GOOS != "linux" && def.RESPIO != server.RESPIOGoroutine {
		t.Errorf("default RESP I/O on %s: %q, %v", runtime.GOOS, def.RESPIO, err)
	}
	for _, c := range cases {
		err := c.cfg.Validate()
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != c.want {
			t.Errorf("%+v:\n got %q\nwant %q", c.cfg, got, c.want)
		}
	}
}

func TestConnectionsMax(t *testing.T) {
	s := servertest.Start(t, servertest.Options{NoHTTP: true, Config: server.Config{ConnectionsMax: 2}})
	a, b := dialWire(t, s.RESPAddr()), dialWire(t, s.RESPAddr())
	for _, w := range []*wire{a, b} {
		w.send(command("PING"))
		if got := w.reply(); got != "+PONG\r\n" {
			t.Fatalf("PING: %q", got)
		}
	}
	c := dialWire(t, s.RESPAddr())
	if got := c.reply(); got != "-ERR max number of clients reached\r\n" {
		t.Fatalf("third connection: %q", got)
	}
	if !c.closed() {
		t.Fatal("the refused connection stays open")
	}
	// Once one leaves, a new one is served. The server notices the close
	// asynchronously: retry for a while.
	a.nc.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		d := dialWire(t, s.RESPAddr())
		d.send(command("PING"))
		if got := d.reply(); got == "+PONG\r\n" {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("no room after a connection closed: %q", got)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestPipelineDepth sends a pipeline much deeper than the limit: it is
// served in rounds, every reply in order.
func TestPipelineDepth(t *testing.T) {
	s := servertest.Start(t, servertest.Options{NoHTTP: true, Config: server.Config{PipelineDepthMax: 4}})
	if _, err := s.Engine.Stock(inventory.RowKey{SKU: "s", Warehouse: "w", Condition: "c", Source: "o"}, 100, 1); err != nil {
		t.Fatal(err)
	}
	w := dialWire(t, s.RESPAddr())
	var batch []byte
	for i := 0; i < 50; i++ {
		batch = append(batch, command("CAPTURE", "s", "c", "o", "1")...)
		batch = append(batch, command("PING", fmt.Sprint(i))...)
	}
	w.send(batch)
	for i := 0; i < 50; i++ {
		if got := w.reply(); got != "*1\r\n*2\r\n$1\r\nw\r\n:1\r\n" {
			t.Fatalf("capture %d: %q", i, got)
		}
		if got, want := w.reply(), fmt.Sprintf("$%d\r\n%d\r\n", len(fmt.Sprint(i)), i); got != want {
			t.Fatalf("ping %d: %q, want %q", i, got, want)
		}
	}
	if r, _ := s.Engine.Available(inventory.GroupKey{SKU: "s", Condition: "c", Source: "o"}); r.Count != 50 {
		t.Fatalf("available %d after 50 captures of 100", r.Count)
	}
}

// getMetrics returns the Prometheus text the server at httpAddr serves.
func getMetrics(t *testing.T, httpAddr string) string {
	t.Helper()
	code, text := httpDo(t, "GET", "http://"+httpAddr+"/metrics", "", "")
	if code != 200 {
		t.Fatalf("GET /metrics: %d", code)
	}
	return text
}

func httpDo(t *testing.T, method, url, token, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

func TestHTTPBearer(t *testing.T) {
	s := servertest.Start(t, servertest.Options{NoRESP: true, Config: server.Config{Password: "s3cret"}})
	base := "http://" + s.HTTPAddr()
	unauthorized := `{"error":"unauthorized","detail":"missing or wrong bearer token"}` + "\n"
	for _, token := range []string{"", "wrong"} {
		for _, path := range []string{"/v1/available?sku=a&condition=b&source=c", "/metrics"} {
			if code, body := httpDo(t, "GET", base+path, token, ""); code != 401 || body != unauthorized {
				t.Errorf("GET %s with token %q: %d %s", path, token, code, body)
			}
		}
	}
	if code, body := httpDo(t, "GET", base+"/v1/available?sku=a&condition=b&source=c", "s3cret", ""); code != 200 || body != `{"available":0}`+"\n" {
		t.Errorf("with the token: %d %s", code, body)
	}
	for _, path := range []string{"/healthz", "/openapi.json"} {
		if code, _ := httpDo(t, "GET", base+path, "", ""); code != 200 {
			t.Errorf("GET %s without a token: %d, want 200", path, code)
		}
	}
}

// TestOpenAPI checks that the served document is the checked-in one and
// that it describes exactly the routes the server serves.
func TestOpenAPI(t *testing.T) {
	s := servertest.Start(t, servertest.Options{NoRESP: true})
	code, served := httpDo(t, "GET", "http://"+s.HTTPAddr()+"/openapi.json", "", "")
	if code != 200 {
		t.Fatalf("GET /openapi.json: %d", code)
	}
	checkedIn, err := os.ReadFile("../docs/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	if served != string(checkedIn) {
		t.Fatal("docs/openapi.json differs from the served document (server/openapi.json): cp server/openapi.json docs/openapi.json")
	}
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(checkedIn, &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Fatalf("openapi version %q", doc.OpenAPI)
	}
	var documented []string
	for path, methods := range doc.Paths {
		for m := range methods {
			documented = append(documented, strings.ToUpper(m)+" "+path)
		}
	}
	slices.Sort(documented)
	want := []string{"DELETE /v1/catalog/{sku}", "GET /healthz", "GET /metrics", "GET /openapi.json", "GET /v1/available", "GET /v1/catalog/{sku}", "GET /v1/changes", "GET /v1/holds/{hold}", "GET /v1/search", "GET /v1/stock", "POST /v1/capture", "POST /v1/holds", "POST /v1/holds/{hold}/cancel", "POST /v1/holds/{hold}/confirm", "POST /v1/orders", "POST /v1/release", "PUT /v1/catalog/{sku}", "PUT /v1/stock"}
	if !slices.Equal(documented, want) {
		t.Fatalf("documented %v, want %v", documented, want)
	}
	// Every documented route answers something other than 404/405.
	for _, r := range documented {
		method, path, _ := strings.Cut(r, " ")
		if path == "/v1/changes" {
			path += "?after=9223372036854775807" // a cursor past the end: 400 at once, not an endless stream
		}
		if code, body := httpDo(t, method, "http://"+s.HTTPAddr()+path, "", "{}"); code == 404 && strings.Contains(body, "no endpoint") || code == 405 {
			t.Errorf("%s: %d %s", r, code, body)
		}
	}
}

// fsyncServerClient starts a server in fsync mode and a client of its RESP
// address, closed when the test ends.
func fsyncServerClient(t *testing.T) (*servertest.Server, *client.Client) {
	t.Helper()
	s := servertest.Start(t, servertest.Options{Durability: engine.DurabilityFsync})
	c, err := client.New(client.Config{Addr: s.RESPAddr()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return s, c
}

// TestMetrics checks the Prometheus text: the format of every line, and
// counters that follow the ops sent over both protocols.
func TestMetrics(t *testing.T) {
	s, c := fsyncServerClient(t)
	ctx := context.Background()
	row := inventory.RowKey{SKU: "s", Warehouse: "w", Condition: "c", Source: "o"}
	c.Stock(ctx, row, 3, 1)
	c.Capture(ctx, row.Group(), 2, nil)
	c.Capture(ctx, row.Group(), 2, nil)
	c.Release(ctx, inventory.RowKey{SKU: "x", Warehouse: "w", Condition: "c", Source: "o"}, 1)
	c.Release(ctx, row, 0)
	base := "http://" + s.HTTPAddr()
	httpDo(t, "POST", base+"/v1/capture", "", `{"sku":"s","condition":"c","source":"o","quantity":1}`)
	httpDo(t, "POST", base+"/v1/capture", "", `{"sku":"s","condition":"c","source":"o","quantity":"1"}`)

	text := getMetrics(t, s.HTTPAddr())
	sample := regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[a-zA-Z_][a-zA-Z0-9_]*="[^"]*"(,[a-zA-Z_][a-zA-Z0-9_]*="[^"]*")*\})? ([0-9.e+-]+|NaN|[+-]Inf)$`)
	for _, l := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		if strings.HasPrefix(l, "# HELP ") || strings.HasPrefix(l, "# TYPE ") {
			continue
		}
		if !sample.MatchString(l) {
			t.Errorf("not a Prometheus sample line: %q", l)
		}
	}
	for _, want := range []string{
		`allot_ops_total{op="stock",protocol="resp",result="ok"} 1`,
		`allot_ops_total{op="capture",protocol="resp",result="ok"} 1`,
		`allot_ops_total{op="capture",protocol="resp",result="insufficient"} 1`,
		`allot_ops_total{op="release",protocol="resp",result="not_found"} 1`,
		`allot_ops_total{op="release",protocol="resp",result="invalid"} 1`,
		`allot_ops_total{op="capture",protocol="http",result="ok"} 1`,
		`allot_ops_total{op="capture",protocol="http",result="invalid"} 1`,
		`allot_op_duration_seconds_count{op="capture",protocol="resp"} 2`,
		`allot_op_duration_seconds_bucket{op="capture",protocol="resp",le="+Inf"} 2`,
		// Every stage of the durable path was timed (server/stage.go).
		`allot_stage_duration_seconds_count{stage="read"} `,
		`allot_stage_duration_seconds_count{stage="sync"} `,
		`allot_stage_duration_seconds_count{stage="reply"} `,
		// The client library's own collectors.
		`go_goroutines `,
		`process_resident_memory_bytes `,
		`allot_resp_connections 1`,
		`allot_resp_connections_accepted_total 1`,
		`allot_engine_fsync_duration_seconds_count `,
		`allot_engine_batch_size_bucket{le="+Inf"} `,
		`allot_engine_journal_bytes `,
		`allot_resp_pipeline_commands_count 5`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if strings.Contains(text, "allot_engine_fsync_duration_seconds_count 0\n") {
		t.Errorf("fsync mode reports no fsync")
	}
	for _, st := range []string{"read", "parse", "queue", "batch", "write", "sync", "wake", "reply"} {
		if strings.Contains(text, `allot_stage_duration_seconds_count{stage="`+st+`"} 0`+"\n") {
			t.Errorf("stage %s was never timed in fsync mode", st)
		}
	}
}

// TestShutdown: Shutdown with connections open, some idle and one in the
// middle of a stream of pipelines, returns; every op the client saw
// acknowledged is in the engine, and nothing is accepted afterwards.
func TestShutdown(t *testing.T) {
	for _, io := range []string{server.RESPIOLoop, server.RESPIOGoroutine} {
		t.Run(io, func(t *testing.T) {
			if io == server.RESPIOLoop && runtime.GOOS != "linux" {
				t.Skip("the event loop is Linux's")
			}
			testShutdown(t, io)
		})
	}
}

func testShutdown(t *testing.T, io string) {
	dir := t.TempDir()
	e, err := engine.Open(engine.Config{Dir: dir, Durability: engine.DurabilityFsync})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Config{RESPAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0", RESPIO: io}, e)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve() }()
	row := inventory.RowKey{SKU: "s", Warehouse: "w", Condition: "c", Source: "o"}
	if _, err := e.Stock(row, 0, 1); err != nil {
		t.Fatal(err)
	}
	idle := dialWire(t, srv.RESPAddr())
	idle.send(command("PING"))
	idle.reply()

	c, err := client.New(client.Config{Addr: srv.RESPAddr()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var acked int64
	var wg sync.WaitGroup
	wg.Add(1)
	started := make(chan struct{})
	go func() {
		defer wg.Done()
		ops := make([]inventory.Op, 32)
		for i := range ops {
			ops[i] = inventory.Release(row, 1)
		}
		results := make([]inventory.Result, len(ops))
		for i := 0; ; i++ {
			if err := c.Pipeline(context.Background(), ops, results); err != nil {
				return
			}
			acked += int64(len(ops))
			if i == 3 {
				close(started)
			}
		}
	}()
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if err := <-served; err != nil {
		t.Fatalf("serve: %v", err)
	}
	wg.Wait()
	if !idle.closed() {
		t.Error("an idle connection stayed open after shutdown")
	}
	if nc, err := net.DialTimeout("tcp", srv.RESPAddr(), time.Second); err == nil {
		nc.Close()
		t.Error("a new connection was accepted after shutdown")
	}
	r, err := e.Get(row)
	if err != nil {
		t.Fatal(err)
	}
	if r.Count < acked {
		t.Fatalf("the engine holds %d units, the client saw %d releases acknowledged", r.Count, acked)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	// The same directory serves the same state.
	e2, err := engine.Open(engine.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer e2.Close()
	r2, _ := e2.Get(row)
	if r2.Count != r.Count {
		t.Fatalf("reopened: count %d, before %d", r2.Count, r.Count)
	}
}

func TestHTTPBodyLimitNamesTheLimit(t *testing.T) {
	s := servertest.Start(t, servertest.Options{NoRESP: true, Config: server.Config{RequestBytesMax: 100}})
	body := `{"sku":"` + strings.Repeat("s", 200) + `"}`
	code, got := httpDo(t, "POST", "http://"+s.HTTPAddr()+"/v1/capture", "", body)
	if code != 400 || !bytes.Contains([]byte(got), []byte("body is larger than 100 bytes (request bytes max)")) {
		t.Fatalf("%d %s", code, got)
	}
}

// TestHTTPConnectionsMax moved to TestHTTPConnectionsMaxAnswers503
// (http_conns_audit12_test.go): past the limit a new HTTP connection is
// now answered 503 naming the limit instead of waiting unanswered.
