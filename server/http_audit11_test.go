package server

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"allot/engine"
	"allot/vfs"
)

// servedEngineWith serves cfg on a new engine opened with ecfg (in a
// fresh directory unless ecfg names one) until the test ends.
func servedEngineWith(t *testing.T, cfg Config, ecfg engine.Config) (*Server, *engine.Engine) {
	t.Helper()
	if ecfg.Dir == "" {
		ecfg.Dir = t.TempDir()
	}
	e, err := engine.Open(ecfg)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(cfg, e)
	if err != nil {
		e.Close()
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve() }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
		e.Close() // a test that failed the journal expects its error here
	})
	return s, e
}

// audit11Reply is one HTTP exchange as a test saw it.
type audit11Reply struct {
	status int
	raw    string         // the body; empty for an event stream
	json   map[string]any // the body decoded, when it is a JSON object
}

// audit11Do sends one request, with the bearer token when it is not "",
// and the header pairs given. An event stream's body is not read: its
// status is what the test wants, and it would not end.
func audit11Do(t *testing.T, method, url, token, body string, header ...string) audit11Reply {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Add(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	out := audit11Reply{status: resp.StatusCode}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return out
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", method, url, err)
	}
	out.raw = string(b)
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") && len(b) > 0 && b[0] == '{' {
		json.Unmarshal(b, &out.json)
	}
	return out
}

// routeOf is the documented path template a request path falls under.
func routeOf(path string) string {
	path, _, _ = strings.Cut(path, "?")
	if rest, ok := strings.CutPrefix(path, "/v1/holds/"); ok {
		switch {
		case strings.HasSuffix(rest, "/confirm"):
			return "/v1/holds/{hold}/confirm"
		case strings.HasSuffix(rest, "/cancel"):
			return "/v1/holds/{hold}/cancel"
		}
		return "/v1/holds/{hold}"
	}
	if strings.HasPrefix(path, "/v1/catalog/") {
		return "/v1/catalog/{sku}"
	}
	return path
}

// apiDoc is openapi.json, read generically so that a test can follow its
// references.
type apiDoc struct{ root map[string]any }

func loadAPIDoc(t *testing.T) apiDoc {
	t.Helper()
	var root map[string]any
	if err := json.Unmarshal(openAPI, &root); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	return apiDoc{root: root}
}

// resolve follows a "$ref" to what it names.
func (d apiDoc) resolve(v any) map[string]any {
	m, _ := v.(map[string]any)
	for m != nil {
		ref, ok := m["$ref"].(string)
		if !ok {
			return m
		}
		var cur any = d.root
		for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
			c, _ := cur.(map[string]any)
			cur = c[part]
		}
		m, _ = cur.(map[string]any)
	}
	return nil
}

// operations lists the documented operations, "METHOD /path".
func (d apiDoc) operations() []string {
	var ops []string
	paths, _ := d.root["paths"].(map[string]any)
	for path, methods := range paths {
		for m := range methods.(map[string]any) {
			ops = append(ops, strings.ToUpper(m)+" "+path)
		}
	}
	slices.Sort(ops)
	return ops
}

func (d apiDoc) operation(op string) map[string]any {
	method, path, _ := strings.Cut(op, " ")
	paths, _ := d.root["paths"].(map[string]any)
	methods, _ := paths[path].(map[string]any)
	o, _ := methods[strings.ToLower(method)].(map[string]any)
	return o
}

// open reports whether the operation is documented as served without the
// bearer token (an empty security list).
func (d apiDoc) open(op string) bool {
	sec, ok := d.operation(op)["security"].([]any)
	return ok && len(sec) == 0
}

// response is the documented response of op for status, or nil.
func (d apiDoc) response(op string, status int) map[string]any {
	responses, _ := d.operation(op)["responses"].(map[string]any)
	return d.resolve(responses[strconv.Itoa(status)])
}

// bodyFits reports what of body the documented JSON schema of a response
// does not describe: a member it has no property for, or an "error" value
// out of its enum. A schema without properties describes any object.
func (d apiDoc) bodyFits(resp map[string]any, body map[string]any) string {
	content, _ := resp["content"].(map[string]any)
	media, ok := content["application/json"].(map[string]any)
	if !ok {
		return "no application/json content documented"
	}
	props := map[string]bool{}
	errs := map[string]bool{}
	anyError, anyProps := false, false
	var walk func(s map[string]any)
	walk = func(s map[string]any) {
		s = d.resolve(s)
		for _, k := range []string{"oneOf", "anyOf", "allOf"} {
			if alts, ok := s[k].([]any); ok {
				for _, a := range alts {
					walk(d.resolve(a))
				}
			}
		}
		p, ok := s["properties"].(map[string]any)
		if !ok {
			if _, alt := s["oneOf"]; !alt {
				anyProps = true
			}
			return
		}
		for k := range p {
			props[k] = true
		}
		if e, ok := p["error"].(map[string]any); ok {
			enum, ok := e["enum"].([]any)
			if !ok {
				anyError = true
			}
			for _, v := range enum {
				errs[v.(string)] = true
			}
		}
	}
	walk(d.resolve(media["schema"]))
	if anyProps {
		return ""
	}
	for k := range body {
		if !props[k] {
			return "member " + strconv.Quote(k) + " is not in the documented schema"
		}
	}
	if e, ok := body["error"].(string); ok && !anyError && !errs[e] {
		return "error " + strconv.Quote(e) + " is not in the documented enum"
	}
	return ""
}

// audit11Sample is a request per documented operation: a valid one, and
// one with bad input ("" where the operation takes none).
type audit11Sample struct {
	path, body       string
	badPath, badBody string
}

var audit11Samples = map[string]audit11Sample{
	"PUT /v1/stock":                 {"/v1/stock", `{"sku":"a","warehouse":"w1","condition":"n","source":"o","count":5,"price":1}`, "/v1/stock", `{"bogus":1}`},
	"GET /v1/stock":                 {"/v1/stock?sku=a&warehouse=w1&condition=n&source=o", "", "/v1/stock?bogus=1", ""},
	"GET /v1/available":             {"/v1/available?sku=a&condition=n&source=o", "", "/v1/available?bogus=1", ""},
	"POST /v1/capture":              {"/v1/capture", `{"sku":"a","condition":"n","source":"o","quantity":1}`, "/v1/capture", `{"bogus":1}`},
	"POST /v1/release":              {"/v1/release", `{"sku":"a","warehouse":"w1","condition":"n","source":"o","quantity":1}`, "/v1/release", `{"bogus":1}`},
	"POST /v1/holds":                {"/v1/holds", `{"hold":"h9","ttl_ms":60000,"lines":[{"sku":"a","condition":"n","source":"o","quantity":1}]}`, "/v1/holds", `{"bogus":1}`},
	"GET /v1/holds/{hold}":          {"/v1/holds/h9", "", "/v1/holds/" + strings.Repeat("x", 65), ""},
	"POST /v1/holds/{hold}/confirm": {"/v1/holds/h9/confirm", "", "/v1/holds/" + strings.Repeat("x", 65) + "/confirm", ""},
	"POST /v1/holds/{hold}/cancel":  {"/v1/holds/h9/cancel", "", "/v1/holds/" + strings.Repeat("x", 65) + "/cancel", ""},
	"POST /v1/orders":               {"/v1/orders", `{"lines":[{"sku":"a","condition":"n","source":"o","quantity":1}]}`, "/v1/orders", `{"bogus":1}`},
	"PUT /v1/catalog/{sku}":         {"/v1/catalog/a", `{"title":"Soft shoe","brand":"Acme","attributes":{}}`, "/v1/catalog/a", `{"bogus":1}`},
	"GET /v1/catalog/{sku}":         {"/v1/catalog/a", "", "/v1/catalog/" + strings.Repeat("x", 65), ""},
	"DELETE /v1/catalog/{sku}":      {"/v1/catalog/a", "", "/v1/catalog/" + strings.Repeat("x", 65), ""},
	"GET /v1/search":                {"/v1/search?q=soft", "", "/v1/search?q=", ""},
	"GET /v1/changes":               {"/v1/changes?after=0", "", "/v1/changes?after=x", ""},
	"GET /healthz":                  {"/healthz", "", "", ""},
	"GET /metrics":                  {"/metrics", "", "", ""},
	"GET /openapi.json":             {"/openapi.json", "", "", ""},
}

// TestOpenAPIDocumentsEveryStatus drives every documented operation into
// the statuses its handler answers (no token, bad input, success, each
// business outcome, a full change-stream bound, a failed journal) and
// checks that openapi.json documents each status the server sent for that
// path and method, with a schema that describes the body. A handler that
// comes to answer a status its operation does not document fails here.
// The document missed 409 mismatch on capture and stock, 401 and 503 on
// the catalog and search, and "applied" on the change stream's 503.
func TestOpenAPIDocumentsEveryStatus(t *testing.T) {
	doc := loadAPIDoc(t)
	ops := doc.operations()
	for _, op := range ops {
		if _, ok := audit11Samples[op]; !ok {
			t.Fatalf("no sample request for %s: add one to audit11Samples", op)
		}
	}
	type seen struct {
		op, via string
		reply   audit11Reply
	}
	var got []seen
	observe := func(via, method, path string, r audit11Reply) audit11Reply {
		got = append(got, seen{op: method + " " + routeOf(path), via: via, reply: r})
		return r
	}
	const token = "pw"
	s, _ := servedEngineWith(t, Config{HTTPAddr: "127.0.0.1:0", Password: token, ChangeStreamsMax: 1}, engine.Config{Durability: engine.DurabilityWrite})
	base := "http://" + s.HTTPAddr()
	call := func(via, method, path, body string, header ...string) audit11Reply {
		t.Helper()
		return observe(via, method, path, audit11Do(t, method, base+path, token, body, header...))
	}
	// expect checks a scenario's status and error: what makes sure the
	// scenarios reach the statuses they are meant to.
	expect := func(r audit11Reply, what string, status int, errWant string) {
		t.Helper()
		if r.status != status || (errWant != "" && r.json["error"] != errWant) {
			t.Errorf("%s: %d %s, want %d %s", what, r.status, r.raw, status, errWant)
		}
	}

	// Every operation without the token: 401, unless documented open.
	for _, op := range ops {
		method, _, _ := strings.Cut(op, " ")
		sm := audit11Samples[op]
		r := observe("no token", method, sm.path, audit11Do(t, method, base+sm.path, "", sm.body))
		if open := doc.open(op); open == (r.status == http.StatusUnauthorized) {
			t.Errorf("%s without a token: %d (documented open: %v)", op, r.status, open)
		}
	}
	// Every operation with bad input: 400.
	for _, op := range ops {
		method, _, _ := strings.Cut(op, " ")
		if sm := audit11Samples[op]; sm.badPath != "" {
			expect(call("bad input", method, sm.badPath, sm.badBody), op+" with bad input", 400, "invalid")
		}
	}
	// Successes and business outcomes.
	stock := audit11Samples["PUT /v1/stock"]
	expect(call("stock", "PUT", "/v1/stock", stock.body), "stock", 200, "")
	expect(call("get", "GET", audit11Samples["GET /v1/stock"].path, ""), "GET a row", 200, "")
	expect(call("get", "GET", "/v1/stock?sku=a", ""), "GET the rows of a SKU", 200, "")
	expect(call("get", "GET", "/v1/stock?sku=a&warehouse=w9&condition=n&source=o", ""), "GET a missing row", 404, "not_found")
	expect(call("available", "GET", audit11Samples["GET /v1/available"].path, ""), "available", 200, "")
	expect(call("capture", "POST", "/v1/capture", `{"sku":"a","condition":"n","source":"o","quantity":1000}`), "capture past the total", 409, "insufficient")
	expect(call("capture", "POST", "/v1/capture", `{"sku":"a","condition":"n","source":"o","quantity":1}`, "Idempotency-Key", "k-capture"), "capture", 200, "")
	expect(call("capture", "POST", "/v1/capture", `{"sku":"a","condition":"n","source":"o","quantity":2}`, "Idempotency-Key", "k-capture"), "capture repeated with other arguments", 409, "mismatch")
	expect(call("release", "POST", "/v1/release", `{"sku":"a","warehouse":"w9","condition":"n","source":"o","quantity":1}`, "Idempotency-Key", "k-release"), "release of a missing row", 404, "not_found")
	expect(call("release", "POST", "/v1/release", `{"sku":"a","warehouse":"w9","condition":"n","source":"o","quantity":2}`, "Idempotency-Key", "k-release"), "release repeated with other arguments", 409, "mismatch")
	expect(call("release", "POST", "/v1/release", audit11Samples["POST /v1/release"].body), "release", 200, "")
	expect(call("stock", "PUT", "/v1/stock", stock.body, "Idempotency-Key", "k-stock"), "keyed stock", 200, "")
	expect(call("stock", "PUT", "/v1/stock", strings.Replace(stock.body, `"count":5`, `"count":6`, 1), "Idempotency-Key", "k-stock"), "stock repeated with other arguments", 409, "mismatch")
	hold := `{"hold":"h1","ttl_ms":60000,"lines":[{"sku":"a","condition":"n","source":"o","quantity":1}]}`
	expect(call("hold", "POST", "/v1/holds", hold), "hold", 201, "")
	expect(call("hold", "POST", "/v1/holds", strings.Replace(hold, `"quantity":1`, `"quantity":2`, 1)), "hold repeated with other lines", 409, "mismatch")
	expect(call("hold", "POST", "/v1/holds", `{"hold":"h2","ttl_ms":60000,"lines":[{"sku":"a","condition":"n","source":"o","quantity":1000}]}`), "hold past the total", 409, "insufficient")
	expect(call("hold", "POST", "/v1/holds", `{"hold":"h3","ttl_ms":60000,"lines":[{"sku":"a","condition":"n","source":"o","quantity":1}]}`), "hold", 201, "")
	expect(call("hold", "GET", "/v1/holds/h1", ""), "hold get", 200, "")
	expect(call("hold", "GET", "/v1/holds/h0", ""), "hold get of a missing hold", 404, "not_found")
	expect(call("hold", "POST", "/v1/holds/h0/confirm", ""), "confirm of a missing hold", 404, "not_found")
	expect(call("hold", "POST", "/v1/holds/h0/cancel", ""), "cancel of a missing hold", 404, "not_found")
	expect(call("hold", "POST", "/v1/holds/h1/confirm", ""), "confirm", 200, "")
	expect(call("hold", "POST", "/v1/holds/h1/cancel", ""), "cancel of a confirmed hold", 409, "confirmed")
	expect(call("hold", "POST", "/v1/holds/h3/cancel", ""), "cancel", 200, "")
	expect(call("hold", "POST", "/v1/holds/h3/confirm", ""), "confirm of a cancelled hold", 409, "cancelled")
	order := audit11Samples["POST /v1/orders"].body
	expect(call("order", "POST", "/v1/orders", order, "Idempotency-Key", "k-order"), "order", 200, "")
	expect(call("order", "POST", "/v1/orders", strings.Replace(order, `"quantity":1`, `"quantity":2`, 1), "Idempotency-Key", "k-order"), "order repeated with other lines", 409, "mismatch")
	expect(call("order", "POST", "/v1/orders", strings.Replace(order, `"quantity":1`, `"quantity":1000`, 1)), "order past the total", 409, "insufficient")
	record := audit11Samples["PUT /v1/catalog/{sku}"].body
	expect(call("catalog", "PUT", "/v1/catalog/a", record, "Idempotency-Key", "k-catalog"), "catalog set", 200, "")
	expect(call("catalog", "PUT", "/v1/catalog/a", strings.Replace(record, "Acme", "Other", 1), "Idempotency-Key", "k-catalog"), "catalog set repeated with other arguments", 409, "mismatch")
	expect(call("catalog", "GET", "/v1/catalog/a", ""), "catalog get", 200, "")
	expect(call("catalog", "GET", "/v1/catalog/b", ""), "catalog get of a missing record", 404, "not_found")
	expect(call("search", "GET", "/v1/search?q=soft", ""), "search", 200, "")
	expect(call("catalog", "DELETE", "/v1/catalog/a", "", "Idempotency-Key", "k-del"), "catalog delete", 200, "")
	expect(call("catalog", "DELETE", "/v1/catalog/b", "", "Idempotency-Key", "k-del"), "catalog delete repeated with another SKU", 409, "mismatch")
	expect(call("changes", "GET", "/v1/changes?after=9223372036854775807", ""), "changes past the newest", 400, "invalid")
	for _, op := range []string{"GET /healthz", "GET /metrics", "GET /openapi.json"} {
		method, path, _ := strings.Cut(op, " ")
		expect(call("served", method, path, ""), op, 200, "")
	}
	// The change streams at their bound: one more is 503. A stream holds
	// a reader slot only while it reads, so the test holds the one slot
	// itself, as a reader being served does.
	func() {
		req, _ := http.NewRequest("GET", base+"/v1/changes?after=0", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("GET /v1/changes: %s", resp.Status)
		}
		observe("changes", "GET", "/v1/changes", audit11Reply{status: 200})
		release := HoldChangeSlots(s, 1)
		defer release()
		expect(call("changes", "GET", "/v1/changes?after=0", ""), "a change stream past the bound", 503, "unavailable")
	}()

	// A failed journal: every engine operation is refused.
	fs := vfs.NewFaulty(vfs.OS{})
	f, _ := servedEngineWith(t, Config{HTTPAddr: "127.0.0.1:0", Password: token}, engine.Config{Durability: engine.DurabilityFsync, FS: fs})
	fbase := "http://" + f.HTTPAddr()
	fcall := func(via, method, path, body string) audit11Reply {
		t.Helper()
		return observe(via, method, path, audit11Do(t, method, fbase+path, token, body))
	}
	expect(fcall("journal", "PUT", "/v1/stock", stock.body), "stock", 200, "")
	fs.FailSyncs(true)
	expect(fcall("journal failing", "PUT", "/v1/stock", stock.body), "stock as the journal fails", 503, "unknown_outcome")
	for _, op := range ops {
		method, path, _ := strings.Cut(op, " ")
		r := fcall("journal failed", method, audit11Samples[op].path, audit11Samples[op].body)
		if strings.HasPrefix(path, "/v1/") && path != "/v1/changes" {
			expect(r, op+" after the journal failed", 503, "unavailable")
		}
	}

	// What was seen is documented.
	for _, g := range got {
		if d := doc.operation(g.op); d == nil {
			t.Errorf("%s (%s): %d %s: the operation is not documented", g.op, g.via, g.reply.status, g.reply.raw)
			continue
		}
		resp := doc.response(g.op, g.reply.status)
		if resp == nil {
			t.Errorf("%s (%s): answered %d %s, which openapi.json does not document for it", g.op, g.via, g.reply.status, strings.TrimSpace(g.reply.raw))
			continue
		}
		if g.reply.json != nil {
			if why := doc.bodyFits(resp, g.reply.json); why != "" {
				t.Errorf("%s (%s): %d %s: %s", g.op, g.via, g.reply.status, strings.TrimSpace(g.reply.raw), why)
			}
		}
	}
}

// TestCatalogPathIsOneSegment: the SKU of /v1/catalog/{sku} is one path
// segment, percent-decoded, as a hold id is. The handler took everything
// after the prefix, decoded: PUT /v1/catalog/s1/ wrote a record for SKU
// "s1/", and /v1/catalog/a/b one for "a/b". A path with more segments
// names no endpoint: 404, as the router answers any other path it does
// not serve. A SKU with a '/' is sent as %2F.
func TestCatalogPathIsOneSegment(t *testing.T) {
	s, _ := servedEngine(t, Config{HTTPAddr: "127.0.0.1:0"}, engine.DurabilityWrite)
	base := "http://" + s.HTTPAddr()
	record := `{"title":"Soft shoe","brand":"Acme","attributes":{}}`
	for _, c := range []struct{ method, path string }{
		{"PUT", "/v1/catalog/s1/"},
		{"PUT", "/v1/catalog/a/b"},
		{"GET", "/v1/catalog/s1/"},
		{"DELETE", "/v1/catalog/s1/x"},
	} {
		r := audit11Do(t, c.method, base+c.path, "", record)
		detail, _ := r.json["detail"].(string)
		if r.status != 404 || r.json["error"] != "not_found" || !strings.Contains(detail, c.path) {
			t.Errorf("%s %s: %d %s, want 404 not_found naming the path", c.method, c.path, r.status, r.raw)
		}
	}
	for _, path := range []string{"/v1/catalog/s1%2F", "/v1/catalog/a%2Fb", "/v1/catalog/s1"} {
		if r := audit11Do(t, "GET", base+path, "", ""); r.raw != `{"error":"not_found"}`+"\n" {
			t.Errorf("GET %s: %d %s: a refused path wrote a record", path, r.status, r.raw)
		}
	}
	// A '/' in a SKU, percent-encoded.
	if r := audit11Do(t, "PUT", base+"/v1/catalog/a%2Fb", "", record); r.status != 200 || r.json["sku"] != "a/b" {
		t.Errorf("PUT /v1/catalog/a%%2Fb: %d %s, want 200 for SKU a/b", r.status, r.raw)
	}
	if r := audit11Do(t, "GET", base+"/v1/catalog/a%2Fb", "", ""); r.status != 200 || r.json["sku"] != "a/b" {
		t.Errorf("GET /v1/catalog/a%%2Fb: %d %s, want the record of SKU a/b", r.status, r.raw)
	}
}

// TestBearerSchemeIsCaseInsensitive: RFC 9110 §11.1, an authentication
// scheme is matched case-insensitively, with one or more spaces before
// the credentials; the token itself is compared exactly.
func TestBearerSchemeIsCaseInsensitive(t *testing.T) {
	s, _ := servedEngine(t, Config{HTTPAddr: "127.0.0.1:0", Password: "s3cret"}, engine.DurabilityWrite)
	url := "http://" + s.HTTPAddr() + "/v1/available?sku=a&condition=b&source=c"
	for _, c := range []struct {
		header string
		status int
	}{
		{"Bearer s3cret", 200},
		{"bearer s3cret", 200},
		{"BEARER s3cret", 200},
		{"bEaReR s3cret", 200},
		{"Bearer  s3cret", 200},
		{"bearer S3CRET", 401},
		{"bearer s3cre", 401},
		{"bearer s3cretx", 401},
		{"Bearers3cret", 401},
		{"Bearer", 401},
		{"Basic s3cret", 401},
		{"Bearer s3cret\u00a0", 401},
		{"Bearer\ts3cret", 401},
	} {
		if r := audit11Do(t, "GET", url, "", "", "Authorization", c.header); r.status != c.status {
			t.Errorf("Authorization: %q: %d %s, want %d", c.header, r.status, r.raw, c.status)
		}
	}
}

// TestUnknownEndpointIsNotAMissingRow: both are 404 not_found (the
// contract's 404, which clients may match on), but a path that names no
// endpoint says so in the detail, while a missing row, hold or record
// answers exactly {"error":"not_found"}. A catalog path with an extra
// segment answered as a missing record. openapi.json says how to tell
// them apart.
func TestUnknownEndpointIsNotAMissingRow(t *testing.T) {
	s, _ := servedEngine(t, Config{HTTPAddr: "127.0.0.1:0"}, engine.DurabilityWrite)
	base := "http://" + s.HTTPAddr()
	for _, c := range []struct{ method, path string }{
		{"POST", "/v1/captur"},
		{"GET", "/v1/stocks"},
		{"GET", "/v2/stock"},
		{"GET", "/v1/catalog/s1/extra"},
		{"GET", "/v1/holds/h1/confirm/x"},
	} {
		r := audit11Do(t, c.method, base+c.path, "", "{}")
		detail, _ := r.json["detail"].(string)
		if r.status != 404 || r.json["error"] != "not_found" || !strings.Contains(detail, "no endpoint") || !strings.Contains(detail, c.path) {
			t.Errorf("%s %s: %d %s, want 404 not_found with a detail naming the unknown endpoint", c.method, c.path, r.status, r.raw)
		}
	}
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/v1/stock?sku=a&warehouse=w&condition=n&source=o", ""},
		{"POST", "/v1/release", `{"sku":"a","warehouse":"w","condition":"n","source":"o","quantity":1}`},
		{"GET", "/v1/holds/h0", ""},
		{"POST", "/v1/holds/h0/confirm", ""},
		{"POST", "/v1/holds/h0/cancel", ""},
		{"GET", "/v1/catalog/s0", ""},
	} {
		if r := audit11Do(t, c.method, base+c.path, "", c.body); r.status != 404 || r.raw != `{"error":"not_found"}`+"\n" {
			t.Errorf("%s %s (missing): %d %q, want 404 {\"error\":\"not_found\"} unchanged", c.method, c.path, r.status, r.raw)
		}
	}
	doc := loadAPIDoc(t)
	info, _ := doc.root["info"].(map[string]any)
	if desc, _ := info["description"].(string); !strings.Contains(desc, `"detail":"no endpoint <path>"`) {
		t.Errorf("openapi.json info.description does not say how an unknown endpoint's 404 differs from a missing row's: %q", desc)
	}
}

// audit11Clock is a clock the test moves by hand.
type audit11Clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *audit11Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *audit11Clock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// TestReadInAFailedBatchWasNotApplied: a read that shares a batch with a
// mutation whose journal sync fails applied nothing, so its 503 is the
// refused class, {"error":"unavailable","applied":false}, not
// unknown_outcome (DESIGN.md "Outcome classes": unknown means maybe
// applied). The batch here is the read's own: the engine expires a hold
// that came due before it applies the read, in the same frame, and that
// frame's sync fails. A mutation in such a batch stays unknown_outcome.
func TestReadInAFailedBatchWasNotApplied(t *testing.T) {
	for _, c := range []struct {
		method, path, body string
		unknown            bool
	}{
		{"GET", "/v1/stock?sku=a&warehouse=w1&condition=n&source=o", "", false},
		{"GET", "/v1/stock?sku=a", "", false},
		{"GET", "/v1/available?sku=a&condition=n&source=o", "", false},
		{"GET", "/v1/holds/h1", "", false},
		{"GET", "/v1/catalog/a", "", false},
		{"GET", "/v1/search?q=soft", "", false},
		{"POST", "/v1/capture", `{"sku":"a","condition":"n","source":"o","quantity":1}`, true},
	} {
		t.Run(c.method+" "+c.path, func(t *testing.T) {
			fs := vfs.NewFaulty(vfs.OS{})
			clock := &audit11Clock{now: time.UnixMilli(1_700_000_000_000)}
			s, _ := servedEngineWith(t, Config{HTTPAddr: "127.0.0.1:0"}, engine.Config{
				Durability: engine.DurabilityFsync, FS: fs, Clock: clock, TickInterval: -1,
			})
			base := "http://" + s.HTTPAddr()
			for _, setup := range []struct{ method, path, body string }{
				{"PUT", "/v1/stock", `{"sku":"a","warehouse":"w1","condition":"n","source":"o","count":5,"price":1}`},
				{"PUT", "/v1/catalog/a", `{"title":"Soft shoe","brand":"Acme","attributes":{}}`},
				{"POST", "/v1/holds", `{"hold":"h1","ttl_ms":1000,"lines":[{"sku":"a","condition":"n","source":"o","quantity":1}]}`},
			} {
				if r := audit11Do(t, setup.method, base+setup.path, "", setup.body); r.status/100 != 2 {
					t.Fatalf("%s %s: %d %s", setup.method, setup.path, r.status, r.raw)
				}
			}
			clock.advance(2 * time.Second) // h1 is due: the next batch expires it
			fs.FailSyncs(true)
			r := audit11Do(t, c.method, base+c.path, "", c.body)
			if c.unknown {
				if r.status != 503 || r.json["error"] != "unknown_outcome" || r.json["applied"] != "unknown" {
					t.Errorf("a mutation as the journal fails: %d %s, want 503 unknown_outcome", r.status, r.raw)
				}
				return
			}
			if r.status != 503 || r.json["error"] != "unavailable" || r.json["applied"] != false {
				t.Errorf("a read whose batch's sync failed: %d %s, want 503 unavailable applied false", r.status, r.raw)
			}
		})
	}
}
