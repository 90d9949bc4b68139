package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"allot/server/servertest"
)

// catalogHTTP sends one request and returns the status and the decoded
// JSON object of the reply.
func catalogHTTP(t *testing.T, s *servertest.Server, method, path, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+s.HTTPAddr()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s %s: reply is no JSON object: %q", method, path, b)
	}
	return res.StatusCode, m
}

// Title, brand and attributes are UTF-8 (DESIGN.md, "Catalog and
// search"). A JSON decoder replaces invalid bytes with U+FFFD without a
// word, so a PUT carrying them was stored altered with 200 where
// CATALOG.SET of the same bytes is refused: HTTP must refuse it too, and
// store nothing.
func TestHTTPCatalogPutRefusesInvalidUTF8(t *testing.T) {
	s := servertest.Start(t, servertest.Options{})
	w := dialWire(t, s.RESPAddr())
	for _, c := range []struct {
		name, body, detail string
		resp               []string
	}{
		{"title", "{\"title\":\"a\xffb\",\"brand\":\"B\",\"attributes\":{}}", "title is not valid UTF-8",
			[]string{"CATALOG.SET", "s1", "a\xffb", "B"}},
		{"brand", "{\"title\":\"ab\",\"brand\":\"\xc3\",\"attributes\":{}}", "brand is not valid UTF-8",
			[]string{"CATALOG.SET", "s1", "ab", "\xc3"}},
		{"attribute value", "{\"title\":\"ab\",\"brand\":\"B\",\"attributes\":{\"size\":\"\xfe\"}}", "attribute size value is not valid UTF-8",
			[]string{"CATALOG.SET", "s1", "ab", "B", "size", "\xfe"}},
		{"attribute name", "{\"title\":\"ab\",\"brand\":\"B\",\"attributes\":{\"s\xffze\":\"L\"}}", "attribute name is not valid UTF-8",
			[]string{"CATALOG.SET", "s1", "ab", "B", "s\xffze", "L"}},
	} {
		w.send(command(c.resp...))
		if got := w.reply(); got != "-ERR "+c.detail+"\r\n" {
			t.Errorf("%s: RESP says %q, want -ERR %s", c.name, got, c.detail)
		}
		code, m := catalogHTTP(t, s, "PUT", "/v1/catalog/s1", c.body)
		if code != 400 || m["error"] != "invalid" || m["detail"] != c.detail {
			t.Errorf("%s: PUT says %d %v, want 400 invalid %q as RESP", c.name, code, m, c.detail)
		}
		if code, m := catalogHTTP(t, s, "GET", "/v1/catalog/s1", ""); code != 404 {
			t.Fatalf("%s: after the refused PUT the record is %d %v, want 404", c.name, code, m)
		}
	}
	// A lone surrogate escape decodes to U+FFFD too (HTTP only: RESP has
	// no escapes); a U+FFFD sent, as the character or escaped, is kept.
	for _, c := range []struct{ body, detail string }{
		{`{"title":"a\ud800","brand":"B","attributes":{}}`, "title is not valid UTF-8"},
		{`{"title":"ab","brand":"B","attributes":{"size":"\udc00"}}`, "attribute size value is not valid UTF-8"},
		{`{"title":"ab","brand":"B","attributes":{"s\ud800":"L"}}`, "attribute name is not valid UTF-8"},
	} {
		if code, m := catalogHTTP(t, s, "PUT", "/v1/catalog/s1", c.body); code != 400 || m["detail"] != c.detail {
			t.Errorf("PUT %s: %d %v, want 400 %q", c.body, code, m, c.detail)
		}
	}
	code, m := catalogHTTP(t, s, "PUT", "/v1/catalog/s1", `{"title":"a\ufffd","brand":"B","attributes":{"size":"\ufffd"}}`)
	if code != 200 || m["title"] != "a\uFFFD" || m["attributes"].(map[string]any)["size"] != "\uFFFD" {
		t.Errorf("PUT with U+FFFD sent: %d %v, want it stored as sent", code, m)
	}
}

// An attribute named twice is refused over RESP ("attribute x is given
// twice"); a JSON object with a repeated name decoded into a map kept the
// last value and answered 200. Both front ends refuse the same record.
func TestHTTPCatalogPutRefusesRepeatedAttribute(t *testing.T) {
	s := servertest.Start(t, servertest.Options{})
	w := dialWire(t, s.RESPAddr())
	w.send(command("CATALOG.SET", "s1", "ab", "B", "x", "1", "x", "2"))
	if got := w.reply(); got != "-ERR attribute x is given twice\r\n" {
		t.Fatalf("RESP: %q", got)
	}
	code, m := catalogHTTP(t, s, "PUT", "/v1/catalog/s1", `{"title":"ab","brand":"B","attributes":{"x":"1","y":"3","x":"2"}}`)
	if code != 400 || m["error"] != "invalid" || m["detail"] != "attribute x is given twice" {
		t.Errorf("PUT with attribute x twice: %d %v, want 400 invalid \"attribute x is given twice\"", code, m)
	}
	if code, m := catalogHTTP(t, s, "GET", "/v1/catalog/s1", ""); code != 404 {
		t.Errorf("after the refused PUT the record is %d %v, want 404", code, m)
	}
	// Distinct names, in any order, still set the record, sorted by name.
	code, m = catalogHTTP(t, s, "PUT", "/v1/catalog/s1", `{"title":"ab","brand":"B","attributes":{"y":"3","x":"1"}}`)
	if code != 200 || m["attributes"].(map[string]any)["x"] != "1" {
		t.Fatalf("PUT: %d %v", code, m)
	}
	w.send(command("CATALOG.GET", "s1"))
	if got, want := w.reply(), "*3\r\n$2\r\nab\r\n$1\r\nB\r\n*4\r\n$1\r\nx\r\n$1\r\n1\r\n$1\r\ny\r\n$1\r\n3\r\n"; got != want {
		t.Errorf("CATALOG.GET after PUT: %q, want %q", got, want)
	}
}

// GET /v1/search reads its query string as the other GET endpoints do
// (/v1/stock, /v1/available, /v1/changes): an unknown or repeated
// parameter, or a malformed query string, is a 400 that names it. Read
// leniently, a misspelt "limt=5" answered 20 results, "q=a&q=b" searched
// for one of the two, and "q=%zz" said the prefix was empty.
func TestHTTPSearchQueryIsStrict(t *testing.T) {
	s := servertest.Start(t, servertest.Options{})
	if code, m := catalogHTTP(t, s, "PUT", "/v1/catalog/s1", `{"title":"apple","brand":"B","attributes":{}}`); code != 200 {
		t.Fatalf("PUT: %d %v", code, m)
	}
	for _, c := range []struct{ query, detail string }{
		{"q=a&limt=5", `unknown query parameter "limt"`},
		{"q=a&q=b", `query parameter "q" is given 2 times`},
		{"q=a&limit=1&limit=2", `query parameter "limit" is given 2 times`},
		{"q=%zz", "query string is malformed"},
		// Integers as RESP's OFFSET and LIMIT read them: digits, no sign.
		{"q=a&offset=%2B1", "offset must be from 0 to 100000"},
		{"q=a&limit=%2B5", "limit must be from 1 to 1000"},
	} {
		code, m := catalogHTTP(t, s, "GET", "/v1/search?"+c.query, "")
		d, _ := m["detail"].(string)
		if code != 400 || m["error"] != "invalid" || !strings.Contains(d, c.detail) {
			t.Errorf("?%s: %d %v, want 400 invalid naming %s", c.query, code, m, c.detail)
		}
	}
	// What the contract names still works, defaults included.
	code, m := catalogHTTP(t, s, "GET", "/v1/search?q=AP&brand=b&offset=0&limit=1", "")
	if res, _ := m["results"].([]any); code != 200 || len(res) != 1 {
		t.Fatalf("a valid search: %d %v", code, m)
	}
	code, m = catalogHTTP(t, s, "GET", "/v1/search?q=ap", "")
	if res, _ := m["results"].([]any); code != 200 || len(res) != 1 {
		t.Fatalf("a search with defaults: %d %v", code, m)
	}
}
