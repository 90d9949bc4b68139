package server_test

import (
	"net/url"
	"testing"

	"allot/server/servertest"
)

const reservedID = "attribute name id is reserved: RESP reads a trailing ID pair as the idempotency key"

// CATALOG.SET's attributes and its idempotency key are both trailing
// pairs, so an attribute named id (any case) meant different things over
// RESP (the key, when last) and HTTP (an attribute). The name is reserved:
// RESP and HTTP refuse it alike, wherever it stands, and store nothing; a
// trailing ID pair stays the key.
func TestCatalogAttributeIDReserved(t *testing.T) {
	s := servertest.Start(t, servertest.Options{})
	w := dialWire(t, s.RESPAddr())
	for _, c := range []struct {
		body string
		resp []string
	}{
		{`{"title":"Widget","brand":"Acme","attributes":{"id":"42"}}`,
			[]string{"CATALOG.SET", "s1", "Widget", "Acme", "id", "42", "colour", "red"}},
		{`{"title":"Widget","brand":"Acme","attributes":{"colour":"red","Id":"42"}}`,
			[]string{"CATALOG.SET", "s1", "Widget", "Acme", "colour", "red", "Id", "42", "ID", "k1"}},
		{`{"title":"Widget","brand":"Acme","attributes":{"iD":""}}`,
			[]string{"CATALOG.SET", "s1", "Widget", "Acme", "iD", "", "size", "L"}},
	} {
		code, m := catalogHTTP(t, s, "PUT", "/v1/catalog/s1", c.body)
		if code != 400 || m["error"] != "invalid" || m["detail"] != reservedID {
			t.Errorf("PUT %s: %d %v, want 400 invalid %q", c.body, code, m, reservedID)
		}
		w.send(command(c.resp...))
		if got := w.reply(); got != "-ERR "+reservedID+"\r\n" {
			t.Errorf("%q: RESP says %q, want -ERR %s", c.resp, got, reservedID)
		}
		if code, m := catalogHTTP(t, s, "GET", "/v1/catalog/s1", ""); code != 404 {
			t.Fatalf("after the refused sets the record is %d %v, want 404", code, m)
		}
	}
	// A trailing ID pair is still the key: the record holds no attribute,
	// and the key is bound to it.
	w.send(command("CATALOG.SET", "s1", "Widget", "Acme", "id", "42"))
	if got := w.reply(); got != "+OK\r\n" {
		t.Fatalf("CATALOG.SET with a trailing id pair: %q, want +OK", got)
	}
	w.send(command("CATALOG.GET", "s1"))
	if got := w.reply(); got != "*3\r\n$6\r\nWidget\r\n$4\r\nAcme\r\n*0\r\n" {
		t.Fatalf("CATALOG.GET: %q, want the record without attributes", got)
	}
}

// A search parameter present but empty is refused over HTTP with the
// detail RESP gives for the same empty argument; it was read as absent
// (no brand filter, the default offset or limit).
func TestHTTPSearchEmptyParameterRefused(t *testing.T) {
	s := servertest.Start(t, servertest.Options{})
	w := dialWire(t, s.RESPAddr())
	w.send(command("CATALOG.SET", "s1", "Widget", "Acme"))
	if got := w.reply(); got != "+OK\r\n" {
		t.Fatal(got)
	}
	for _, c := range []struct{ param, word string }{
		{"brand", "BRAND"}, {"offset", "OFFSET"}, {"limit", "LIMIT"},
	} {
		w.send(command("SEARCH", "w", c.word, ""))
		got := w.reply()
		if len(got) < 5 || got[:5] != "-ERR " {
			t.Fatalf("SEARCH w %s \"\": %q, want an -ERR", c.word, got)
		}
		detail := got[5 : len(got)-2]
		path := "/v1/search?q=w&" + url.QueryEscape(c.param) + "="
		code, m := catalogHTTP(t, s, "GET", path, "")
		if code != 400 || m["error"] != "invalid" || m["detail"] != detail {
			t.Errorf("GET %s: %d %v, want 400 invalid %q as RESP", path, code, m, detail)
		}
	}
	// Absent parameters still take their defaults.
	if code, m := catalogHTTP(t, s, "GET", "/v1/search?q=w", ""); code != 200 || len(m["results"].([]any)) != 1 {
		t.Fatalf("GET /v1/search?q=w: %d %v, want the one record", code, m)
	}
}
