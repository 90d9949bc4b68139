package server_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"allot/server"
	"allot/server/servertest"
)

// At ConnectionsMax open HTTP connections, one more is answered at once
// with 503 naming the limit (the refused class: applied false) and closed,
// rather than left waiting in the kernel's accept queue with no word; once
// a connection closes, a new one is served.
func TestHTTPConnectionsMaxAnswers503(t *testing.T) {
	s := servertest.Start(t, servertest.Options{NoRESP: true, Config: server.Config{ConnectionsMax: 1}})
	first, err := net.Dial("tcp", s.HTTPAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	first.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := first.Write([]byte("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(first), nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("first connection: %v %v", resp, err)
	}
	io.Copy(io.Discard, resp.Body)

	client := &http.Client{Timeout: 2 * time.Second}
	start := time.Now()
	resp, err = client.Get("http://" + s.HTTPAddr() + "/healthz")
	if err != nil {
		t.Fatalf("a connection past the limit got no answer in %v: %v", time.Since(start), err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var got struct {
		Error   string `json:"error"`
		Applied *bool  `json:"applied"`
		Detail  string `json:"detail"`
	}
	if resp.StatusCode != http.StatusServiceUnavailable || json.Unmarshal(body, &got) != nil ||
		got.Error != "unavailable" || got.Applied == nil || *got.Applied || !strings.Contains(got.Detail, "--connections-max") ||
		resp.Header.Get("Retry-After") == "" {
		t.Fatalf("a connection past the limit: %s %s (Retry-After %q), want 503 unavailable, applied false, naming --connections-max",
			resp.Status, body, resp.Header.Get("Retry-After"))
	}
	first.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := client.Get("http://" + s.HTTPAddr() + "/healthz")
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no room after the first connection closed: %v %v", resp, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
