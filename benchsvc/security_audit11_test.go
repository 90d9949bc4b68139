package benchsvc

import (
	"net/http"
	"strings"
	"testing"
)

// TestTokenlessServiceServesOnlyLoopbackNames: a page whose owner rebinds
// its name to 127.0.0.1 (DNS rebinding) makes same-origin requests, which
// the cross-origin check lets through: on a service without a token it
// could start runs and read the history. Such requests carry the page's
// own name as Host and are refused now; a token-holding service does not
// look at the Host.
func TestTokenlessServiceServesOnlyLoopbackNames(t *testing.T) {
	_, srv, _ := newTestService(t, Config{})
	if code, _ := do(t, "POST", srv.URL+"/v1/runs", `{}`, "Host", "evil.example:7390", "Sec-Fetch-Site", "same-origin", "Origin", "http://evil.example:7390"); code != http.StatusForbidden {
		t.Errorf("a run started from a rebound name: %d, want 403", code)
	}
	if code, _ := do(t, "GET", srv.URL+"/v1/runs", "", "Host", "evil.example:7390"); code != http.StatusForbidden {
		t.Errorf("the history read from a rebound name: %d, want 403", code)
	}
	if code, _ := do(t, "GET", srv.URL+"/v1/runs", "", "Host", "localhost:7390"); code != http.StatusOK {
		t.Errorf("the history read from localhost: %d, want 200", code)
	}
	_, tsrv, _ := newTestService(t, Config{Token: "s3cret"})
	if code, _ := do(t, "GET", tsrv.URL+"/v1/runs", "", "Host", "bench.example", "Authorization", "Bearer s3cret"); code != http.StatusOK {
		t.Errorf("with a token, Host bench.example: %d, want 200", code)
	}
}

// TestTokenCookieIsPercentDecoded: the page stores the token in its cookie
// percent-encoded (encodeURIComponent), and the service compared the raw
// value: a token with + / = (base64, as openssl rand -base64 makes) was
// refused, and the report frames failed.
func TestTokenCookieIsPercentDecoded(t *testing.T) {
	_, srv, _ := newTestService(t, Config{Token: "a+b/c="})
	if code, _ := do(t, "GET", srv.URL+"/v1/runs", "", "Cookie", "allot_bench_token=a%2Bb%2Fc%3D"); code != http.StatusOK {
		t.Errorf("the page's cookie for token a+b/c=: %d, want 200", code)
	}
	if code, _ := do(t, "GET", srv.URL+"/v1/runs", "", "Cookie", "allot_bench_token=a%2Bb%2Fc"); code != http.StatusUnauthorized {
		t.Errorf("a wrong token in the cookie: %d, want 401", code)
	}
}

// TestPageCannotBeFramed: no other site may frame the page (and trick a
// click on Start, which would be a same-origin POST).
func TestPageCannotBeFramed(t *testing.T) {
	_, srv, _ := newTestService(t, Config{})
	res, err := http.Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if got := res.Header.Get("X-Frame-Options"); got != "DENY" {
		t.Errorf("X-Frame-Options %q, want DENY", got)
	}
	if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") {
		t.Errorf("Content-Security-Policy %q has no frame-ancestors 'none'", csp)
	}
}
