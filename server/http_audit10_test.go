package server

import (
	"bufio"
	"net/http"
	"strings"
	"testing"

	"allot/engine"
)

// servedEngine serves cfg on a new engine in mode d until the test ends.
func servedEngine(t *testing.T, cfg Config, d engine.Durability) (*Server, *engine.Engine) {
	t.Helper()
	return servedEngineWith(t, cfg, engine.Config{Durability: d})
}

// httpAudit10Server serves HTTP on an engine in write mode.
func httpAudit10Server(t *testing.T) *Server {
	t.Helper()
	s, _ := servedEngine(t, Config{HTTPAddr: "127.0.0.1:0"}, engine.DurabilityWrite)
	return s
}

// A body is one JSON object and nothing after it. The check asked the
// decoder whether more values followed, which it answers no for a '}' or
// ']': a capture with "}x" after its object was applied.
func TestBodyWithClosingDataAfterTheObjectIsRefused(t *testing.T) {
	s := httpAudit10Server(t)
	base := "http://" + s.HTTPAddr()
	stock := `{"sku":"s1","warehouse":"w1","condition":"new","source":"own","count":5,"price":100}`
	for _, tail := range []string{"}", "}x", " ]", "]]]", "} {}", "x", "{}"} {
		req, err := http.NewRequest(http.MethodPut, base+"/v1/stock", strings.NewReader(stock+tail))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body strings.Builder
		bufio.NewReader(resp.Body).WriteTo(&body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body.String(), `"invalid"`) {
			t.Errorf("PUT /v1/stock with %q after the object: %s %s, want 400 invalid", tail, resp.Status, body.String())
		}
	}
	// Whitespace after the object is not data.
	resp, err := http.Post(base+"/v1/capture", "application/json",
		strings.NewReader(`{"sku":"s1","condition":"new","source":"own","quantity":1}`+" \n\t"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusConflict {
		t.Errorf("a capture with whitespace after its object: %s", resp.Status)
	}
}

// HEAD of a catalog record answers as GET does, without a body. It ran
// no op (the handler switched on the method and matched none): 400.
func TestCatalogItemHead(t *testing.T) {
	s := httpAudit10Server(t)
	base := "http://" + s.HTTPAddr()
	resp, err := http.Head(base + "/v1/catalog/nosuch")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("HEAD of a missing catalog record: %s, want 404 as GET answers", resp.Status)
	}
	req, err := http.NewRequest(http.MethodPut, base+"/v1/catalog/s1", strings.NewReader(`{"title":"Soft shoe","brand":"Acme","attributes":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	pr, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	pr.Body.Close()
	if pr.StatusCode != http.StatusOK {
		t.Fatalf("PUT /v1/catalog/s1: %s", pr.Status)
	}
	resp, err = http.Head(base + "/v1/catalog/s1")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("HEAD of a catalog record: %s, want 200 as GET answers", resp.Status)
	}
}
