package server_test

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"allot/server"
	"allot/server/servertest"
)

// The HTTP golden file holds exchanges with a fresh server. A request is
// "> METHOD PATH[ BODY]" (the body is the rest of the line, sent as is);
// "> METHOD PATH Idempotency-Key=KEY[ BODY]" sends that header too;
// the response is "< STATUS CONTENT-TYPE" then "< " and the body, one line
// each. Lines starting with "#" and blank lines are kept. -rewrite
// regenerates the responses; review the diff.

type httpStep struct {
	pre  []string
	line string
	resp []string
}

func TestHTTPGolden(t *testing.T) {
	path := filepath.Join("testdata", "http_contract.txt")
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var steps []httpStep
	var pre []string
	for _, l := range strings.Split(strings.TrimSuffix(string(text), "\n"), "\n") {
		switch {
		case strings.HasPrefix(l, "> "):
			steps = append(steps, httpStep{pre: pre, line: l[2:]})
			pre = nil
		case strings.HasPrefix(l, "< "):
			steps[len(steps)-1].resp = append(steps[len(steps)-1].resp, l)
		default:
			pre = append(pre, l)
		}
	}
	s := servertest.Start(t, servertest.Options{NoRESP: true, Config: server.Config{RequestBytesMax: 256}, Clock: servertest.FixedClock{At: time.UnixMilli(1_700_000_000_000)}})
	base := "http://" + s.HTTPAddr()
	g := &golden{t: t, path: path}
	for _, st := range steps {
		parts := strings.SplitN(st.line, " ", 3)
		var body io.Reader
		var key string
		if len(parts) == 3 && strings.HasPrefix(parts[2], "Idempotency-Key=") {
			// "> POST /path Idempotency-Key=k BODY" sends the header.
			key, parts[2], _ = strings.Cut(strings.TrimPrefix(parts[2], "Idempotency-Key="), " ")
		}
		if len(parts) == 3 && parts[2] != "" {
			body = strings.NewReader(parts[2])
		}
		req, err := http.NewRequest(parts[0], base+parts[1], body)
		if err != nil {
			t.Fatal(err)
		}
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		got := []string{"< " + strconv.Itoa(res.StatusCode) + " " + res.Header.Get("Content-Type")}
		for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
			got = append(got, "< "+l)
		}
		g.step(st.pre, st.line, got, st.resp)
	}
	g.finish(pre)
}
