package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"allot/engine"
	"allot/server/servertest"
	"allot/vfs"
)

// httpCall sends one request and returns the status and the decoded JSON
// body.
func httpCall(t *testing.T, method, url, body string, header ...string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Add(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s %s: body %q is not a JSON object: %v", method, url, b, err)
	}
	return resp.StatusCode, m
}

// TestHTTPRefusedSaysNotApplied: once the journal failed, every request
// the engine refuses is a 503 {"error":"unavailable","applied":false}, as
// the outcome classes say, whichever endpoint it came to; the rows of a
// SKU answered without "applied".
func TestHTTPRefusedSaysNotApplied(t *testing.T) {
	fs := vfs.NewFaulty(vfs.OS{})
	s := servertest.Start(t, servertest.Options{NoRESP: true, Durability: engine.DurabilityFsync, FS: fs, JournalMayFail: true})
	base := "http://" + s.HTTPAddr()
	if st, _ := httpCall(t, "PUT", base+"/v1/stock", `{"sku":"a","warehouse":"w1","condition":"n","source":"o","count":5,"price":1}`); st != 200 {
		t.Fatalf("stock: %d", st)
	}
	fs.FailSyncs(true)
	st, body := httpCall(t, "POST", base+"/v1/holds", `{"hold":"h1","ttl_ms":1000,"lines":[{"sku":"a","condition":"n","source":"o","quantity":2}]}`)
	if st != 503 || body["error"] != "unknown_outcome" || body["applied"] != "unknown" {
		t.Fatalf("hold as the sync fails: %d %v", st, body)
	}
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/v1/holds", `{"hold":"h2","ttl_ms":1000,"lines":[{"sku":"a","condition":"n","source":"o","quantity":1}]}`},
		{"POST", "/v1/holds/h1/confirm", ""},
		{"GET", "/v1/holds/h1", ""},
		{"POST", "/v1/orders", `{"lines":[{"sku":"a","condition":"n","source":"o","quantity":1}]}`},
		{"GET", "/v1/available?sku=a&condition=n&source=o", ""},
		{"GET", "/v1/stock?sku=a&warehouse=w1&condition=n&source=o", ""},
		{"GET", "/v1/stock?sku=a", ""},
	} {
		st, body := httpCall(t, c.method, base+c.path, c.body)
		if st != 503 || body["error"] != "unavailable" || body["applied"] != false {
			t.Errorf("%s %s after the journal failed: %d %v, want 503 unavailable applied false", c.method, c.path, st, body)
		}
	}
}

// TestHTTPRefusesIdentifiersNotUTF8: an identifier that is not UTF-8 is
// bad input, refused before it touches state, over HTTP as over RESP.
// encoding/json turned such bytes (and a lone surrogate escape) into
// U+FFFD without a word, so the hold was taken under another id than the
// one sent, and a SKU named another group.
func TestHTTPRefusesIdentifiersNotUTF8(t *testing.T) {
	s := servertest.Start(t, servertest.Options{})
	base := "http://" + s.HTTPAddr()
	if st, _ := httpCall(t, "PUT", base+"/v1/stock", `{"sku":"a\ufffd","warehouse":"w1","condition":"n","source":"o","count":5,"price":1}`); st != 200 {
		t.Fatalf("stock: %d", st)
	}
	for _, c := range []struct{ path, body string }{
		{"/v1/holds", "{\"hold\":\"h\xff\",\"ttl_ms\":1000,\"lines\":[{\"sku\":\"a\\ufffd\",\"condition\":\"n\",\"source\":\"o\",\"quantity\":1}]}"},
		{"/v1/holds", `{"hold":"h\udc00","ttl_ms":1000,"lines":[{"sku":"a\ufffd","condition":"n","source":"o","quantity":1}]}`},
		{"/v1/holds", "{\"hold\":\"h2\",\"ttl_ms\":1000,\"lines\":[{\"sku\":\"a\xff\",\"condition\":\"n\",\"source\":\"o\",\"quantity\":1}]}"},
		{"/v1/orders", "{\"lines\":[{\"sku\":\"a\xff\",\"condition\":\"n\",\"source\":\"o\",\"quantity\":1}]}"},
		{"/v1/capture", "{\"sku\":\"a\xff\",\"condition\":\"n\",\"source\":\"o\",\"quantity\":1}"},
	} {
		st, body := httpCall(t, "POST", base+c.path, c.body)
		if st != 400 || body["error"] != "invalid" {
			t.Errorf("POST %s %q: %d %v, want 400 invalid", c.path, c.body, st, body)
		}
	}
	// Nothing was taken; U+FFFD itself, sent as such, is a character like
	// any other.
	st, body := httpCall(t, "GET", base+"/v1/available?sku=a%EF%BF%BD&condition=n&source=o", "")
	if st != 200 || body["available"] != float64(5) {
		t.Fatalf("available: %d %v, want 5", st, body)
	}
	st, body = httpCall(t, "POST", base+"/v1/holds", `{"hold":"h\ufffd","ttl_ms":1000,"lines":[{"sku":"a`+"\uFFFD"+`","condition":"n","source":"o","quantity":1}]}`)
	if st != 201 || body["hold"] != "h\uFFFD" {
		t.Fatalf("hold with U+FFFD in its id: %d %v", st, body)
	}
}

// TestHTTPRefusesRepeatedFields: a body naming a field twice is bad input.
// Decoded into a map it kept the last one without a word: a capture of
// {"sku":"a","sku":"b"} took b's stock, a hold with two "hold" ids was
// taken under the second.
func TestHTTPRefusesRepeatedFields(t *testing.T) {
	s := servertest.Start(t, servertest.Options{})
	base := "http://" + s.HTTPAddr()
	for _, sku := range []string{"a", "b"} {
		if st, _ := httpCall(t, "PUT", base+"/v1/stock", `{"sku":"`+sku+`","warehouse":"w1","condition":"n","source":"o","count":5,"price":1}`); st != 200 {
			t.Fatalf("stock %s: %d", sku, st)
		}
	}
	for _, c := range []struct{ method, path, body, field string }{
		{"POST", "/v1/capture", `{"sku":"a","condition":"n","source":"o","quantity":1,"sku":"b"}`, "sku"},
		{"POST", "/v1/release", `{"sku":"a","warehouse":"w1","condition":"n","source":"o","quantity":1,"quantity":2}`, "quantity"},
		{"PUT", "/v1/stock", `{"sku":"a","warehouse":"w1","condition":"n","source":"o","count":5,"price":1,"count":0}`, "count"},
		{"POST", "/v1/holds", `{"hold":"h1","hold":"h2","ttl_ms":1000,"lines":[{"sku":"a","condition":"n","source":"o","quantity":1}]}`, "hold"},
		{"POST", "/v1/orders", `{"lines":[{"sku":"a","condition":"n","source":"o","quantity":1,"quantity":3}]}`, "quantity"},
	} {
		st, body := httpCall(t, c.method, base+c.path, c.body)
		if want := `field "` + c.field + `" is given twice`; st != 400 || body["error"] != "invalid" || !strings.Contains(body["detail"].(string), want) {
			t.Errorf("%s %s %s: %d %v, want 400 invalid naming %s", c.method, c.path, c.body, st, body, want)
		}
	}
	for _, sku := range []string{"a", "b"} {
		st, body := httpCall(t, "GET", base+"/v1/available?sku="+sku+"&condition=n&source=o", "")
		if st != 200 || body["available"] != float64(5) {
			t.Errorf("available %s: %d %v, want 5: a refused request changed it", sku, st, body)
		}
	}
	if st, _ := httpCall(t, "GET", base+"/v1/holds/h2", ""); st != 404 {
		t.Errorf("hold h2: %d, want 404", st)
	}
}
