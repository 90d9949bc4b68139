package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"allot/server/servertest"
)

func TestHTTPCatalog(t *testing.T) {
	s := servertest.Start(t, servertest.Options{})
	base := "http://" + s.HTTPAddr()
	do := func(method, path, body, key string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%s %s: %s", method, path, b)
		}
		return res.StatusCode, m
	}
	if code, m := do("PUT", "/v1/catalog/s1", `{"title":"Größe Jacke","brand":"ACME","attributes":{"size":"L"}}`, "k1"); code != 200 || m["title"] != "Größe Jacke" {
		t.Fatalf("PUT: %d %v", code, m)
	}
	if code, m := do("GET", "/v1/catalog/s1", "", ""); code != 200 || m["brand"] != "ACME" || m["attributes"].(map[string]any)["size"] != "L" {
		t.Fatalf("GET: %d %v", code, m)
	}
	if code, m := do("GET", "/v1/search?q=GR%C3%96&brand=ac&limit=5", "", ""); code != 200 || len(m["results"].([]any)) != 1 {
		t.Fatalf("search: %d %v", code, m)
	}
	if code, m := do("GET", "/v1/search?q=", "", ""); code != 400 || m["detail"] != "prefix is empty" {
		t.Fatalf("empty prefix: %d %v", code, m)
	}
	if code, m := do("GET", "/v1/search?q=a&limit=x", "", ""); code != 400 || m["detail"] != "limit must be from 1 to 1000" {
		t.Fatalf("bad limit: %d %v", code, m)
	}
	if code, m := do("PUT", "/v1/catalog/s1", `{"title":"other","brand":"ACME","attributes":{}}`, "k1"); code != 409 || m["error"] != "mismatch" {
		t.Fatalf("mismatch: %d %v", code, m)
	}
	if code, m := do("PUT", "/v1/catalog/s2", `{"title":"","brand":"b","attributes":{}}`, ""); code != 400 || m["detail"] != "title is empty" {
		t.Fatalf("empty title: %d %v", code, m)
	}
	if code, m := do("DELETE", "/v1/catalog/s1", "", ""); code != 200 || m["deleted"] != true {
		t.Fatalf("DELETE: %d %v", code, m)
	}
	if code, m := do("GET", "/v1/catalog/s1", "", ""); code != 404 || m["error"] != "not_found" {
		t.Fatalf("GET after DELETE: %d %v", code, m)
	}
}
