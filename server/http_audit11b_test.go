package server

import (
	"net/http"
	"strings"
	"testing"

	"allot/engine"
)

// TestHTTPRefusesOtherSitesAndReboundNames: a server without a password
// trusts whoever can connect, and a browser on this machine can. A page of
// another site could POST a capture as text/plain (no CORS preflight), and
// a page whose name was rebound to 127.0.0.1 made same-origin requests:
// both were applied. Now both get 403 and change nothing; curl-like
// requests (no browser marks, a loopback Host) are served; with a password
// the Host is not checked.
func TestHTTPRefusesOtherSitesAndReboundNames(t *testing.T) {
	s, e := servedEngine(t, Config{RESPAddr: "", HTTPAddr: "127.0.0.1:0"}, engine.DurabilityWrite)
	url := "http://" + s.HTTPAddr()
	stock := func(t *testing.T, header map[string]string, host string) int {
		t.Helper()
		req, err := http.NewRequest("PUT", url+"/v1/stock", strings.NewReader(`{"sku":"s1","warehouse":"w1","condition":"new","source":"own","count":5,"price":1}`))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range header {
			req.Header.Set(k, v)
		}
		if host != "" {
			req.Host = host
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	for _, c := range []struct {
		name   string
		header map[string]string
		host   string
	}{
		{"cross-site fetch", map[string]string{"Sec-Fetch-Site": "cross-site", "Content-Type": "text/plain"}, ""},
		{"another origin", map[string]string{"Origin": "http://evil.example"}, ""},
		{"rebound name", map[string]string{"Sec-Fetch-Site": "same-origin"}, "evil.example:7380"},
	} {
		if got := stock(t, c.header, c.host); got != http.StatusForbidden {
			t.Errorf("%s: %d, want 403", c.name, got)
		}
	}
	if rows, _ := e.Rows(); len(rows) != 0 {
		t.Fatalf("refused requests changed the rows: %v", rows)
	}
	if got := stock(t, nil, ""); got != http.StatusOK {
		t.Fatalf("a request with no browser marks: %d, want 200", got)
	}
	if got := stock(t, map[string]string{"Sec-Fetch-Site": "same-origin"}, "localhost:7380"); got != http.StatusOK {
		t.Fatalf("a same-origin request to localhost: %d, want 200", got)
	}

	// With a password the Host is not checked (a server behind a proxy
	// or on a network address), the cross-site mark still is.
	p, _ := servedEngine(t, Config{RESPAddr: "", HTTPAddr: "127.0.0.1:0", Password: "s3cret"}, engine.DurabilityWrite)
	url = "http://" + p.HTTPAddr()
	auth := map[string]string{"Authorization": "Bearer s3cret"}
	if got := stock(t, auth, "shop.example"); got != http.StatusOK {
		t.Fatalf("with a password, Host shop.example: %d, want 200", got)
	}
	if got := stock(t, map[string]string{"Authorization": "Bearer s3cret", "Sec-Fetch-Site": "cross-site"}, ""); got != http.StatusForbidden {
		t.Fatalf("with a password, a cross-site request: %d, want 403", got)
	}
}
