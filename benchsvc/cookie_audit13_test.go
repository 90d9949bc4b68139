package benchsvc

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// tokenCookieOf returns the token cookie a response sets, or nil.
func tokenCookieOf(res *http.Response) *http.Cookie {
	for _, c := range res.Cookies() {
		if c.Name == tokenCookie {
			return c
		}
	}
	return nil
}

func get(t *testing.T, client *http.Client, url string, hdr ...string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res
}

// TestTokenCookieIsHttpOnlyAudit13: the page's script set the token
// cookie for its report frame itself (document.cookie), so any script
// running in the page could read the token back. The service sets it
// now, on a request that carries the token in its header: HttpOnly,
// SameSite=Strict, Path=/, Secure over TLS only (the service speaks plain
// HTTP on loopback, where a browser would drop a Secure cookie from
// 127.0.0.1), and it lets the frame in.
func TestTokenCookieIsHttpOnlyAudit13(t *testing.T) {
	const token = "a+b/c= d"
	s, srv, _ := newTestService(t, Config{Token: token})
	res := get(t, http.DefaultClient, srv.URL+"/v1/info", "Authorization", "Bearer "+token)
	c := tokenCookieOf(res)
	if c == nil {
		t.Fatalf("a request with the token in its header: no %s cookie set (Set-Cookie %q)", tokenCookie, res.Header.Values("Set-Cookie"))
	}
	if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" || c.Secure {
		t.Errorf("Set-Cookie %q: want HttpOnly, SameSite=Strict, Path=/, not Secure over plain HTTP", res.Header.Get("Set-Cookie"))
	}
	if v, err := url.QueryUnescape(c.Value); err != nil || v != token {
		t.Errorf("the cookie's value %q decodes to %q (%v), want the token", c.Value, v, err)
	}
	// The cookie lets the report frame in, and is not set again.
	res = get(t, http.DefaultClient, srv.URL+"/v1/runs", "Cookie", tokenCookie+"="+c.Value)
	if res.StatusCode != http.StatusOK {
		t.Errorf("a request with the cookie set: %d, want 200", res.StatusCode)
	}
	if tokenCookieOf(res) != nil {
		t.Errorf("a request with the cookie got it again: %q", res.Header.Values("Set-Cookie"))
	}
	// A wrong token gets no cookie.
	res = get(t, http.DefaultClient, srv.URL+"/v1/info", "Authorization", "Bearer wrong")
	if res.StatusCode != http.StatusUnauthorized || tokenCookieOf(res) != nil {
		t.Errorf("a wrong token: %d, Set-Cookie %q; want 401 and no cookie", res.StatusCode, res.Header.Values("Set-Cookie"))
	}
	// A service without a token sets none.
	_, open, _ := newTestService(t, Config{})
	if res := get(t, http.DefaultClient, open.URL+"/v1/info"); tokenCookieOf(res) != nil {
		t.Errorf("a service without a token set %q", res.Header.Values("Set-Cookie"))
	}
	// Over TLS the cookie is Secure too.
	tls := httptest.NewTLSServer(s.Handler())
	defer tls.Close()
	res = get(t, tls.Client(), tls.URL+"/v1/info", "Authorization", "Bearer "+token)
	if c := tokenCookieOf(res); c == nil || !c.Secure || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode {
		t.Errorf("over TLS: Set-Cookie %q, want Secure, HttpOnly, SameSite=Strict", res.Header.Values("Set-Cookie"))
	}
	// No script of the page writes the cookie (it could not write over an
	// HttpOnly one, and one it wrote would be readable by scripts again).
	if strings.Contains(pageJS, "document.cookie") {
		t.Error("page.js still sets document.cookie")
	}
}
