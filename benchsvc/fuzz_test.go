package benchsvc

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func FuzzArgs(f *testing.F) {
	for _, s := range []string{
		`{"stores":["embedded"],"workload":"ims","preset":"hot","ops":50000,"workers":8}`,
		`{"stores":["a,b"]}`, `{"ops":null}`, `[]`, `{"x":{"y":1}}`, `{"retry_delay":"1ms"}`, "",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		args, err := Args(body)
		if err != nil {
			return
		}
		for _, a := range args {
			name, _, ok := strings.Cut(strings.TrimPrefix(a, "--"), "=")
			if !strings.HasPrefix(a, "--") || !ok || fieldsRefused[name] != "" || strings.ContainsAny(a, "\n\x00") {
				t.Fatalf("Args(%q) gave %q", body, a)
			}
		}
	})
}

func FuzzGenLoad(f *testing.F) {
	f.Add([]byte(seedBody))
	f.Add([]byte(`{"threads":5,"load":3,"timeInMilis":1000,"transactional":true,"durable":false,"requestType":"MODIFY_LOCKED","lock":"soft"}`))
	f.Add([]byte(`{"threads":1e309}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		g, err := ParseGenLoad(body)
		if err != nil {
			return
		}
		if g.Threads < 1 || g.TimeInMilis < 1 || g.Load < 1 || g.RequestType == "" {
			t.Fatalf("accepted %q as %+v", body, g)
		}
		_ = GenLoadArgs("embedded", g, GenLoadOps(g))
	})
}

// FuzzHandler sends arbitrary bodies to every POST endpoint of a live
// service: it must answer 202, 400 or 404 (200 or 502 for gen-load; a
// redirect to the cleaned path for a path with "." or ".."), never panic
// or hang.
func FuzzHandler(f *testing.F) {
	f.Add("/v1/runs", []byte(`{"stores":["embedded"],"duration":"1ms"}`))
	f.Add("/test/gen-load/mysql", []byte(`{"threads":1,"timeInMilis":1,"requestType":"READ"}`))
	f.Add("/v1/runs", []byte(`{"stores":["nope"]}`))
	p := &fakeParser{maxDuration: time.Millisecond}
	s, err := New(Config{Parse: p.parse, EventInterval: time.Millisecond})
	if err != nil {
		f.Fatal(err)
	}
	h := s.Handler()
	f.Cleanup(func() { s.Close() })
	f.Fuzz(func(t *testing.T, path string, body []byte) {
		if path != "/v1/runs" && !strings.HasPrefix(path, "/test/gen-load/") {
			path = "/v1/runs"
		}
		req := httptest.NewRequest("POST", "http://127.0.0.1"+strings.Map(func(r rune) rune {
			if r <= ' ' || r > '~' || r == '?' || r == '#' || r == '%' {
				return 'x'
			}
			return r
		}, path), bytes.NewReader(body))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		switch w.Code {
		case http.StatusAccepted, http.StatusBadRequest, http.StatusNotFound, http.StatusOK, http.StatusBadGateway, http.StatusUnprocessableEntity, http.StatusMethodNotAllowed,
			// The mux's redirect to the cleaned path ("/test/gen-load/."):
			// 307 for a POST, which keeps its method and body.
			http.StatusMovedPermanently, http.StatusTemporaryRedirect:
		default:
			t.Fatalf("POST %s %q: %d %s", path, body, w.Code, w.Body)
		}
	})
}
