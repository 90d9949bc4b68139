package main

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestServeProcs(t *testing.T) {
	for _, tc := range []struct {
		given   int
		env     string
		current int
		cpus    int
		want    int
		err     string
	}{
		{0, "", 2, 2, 3, ""},  // automatic: the CPUs, plus one
		{0, "", 1, 1, 2, ""},  // one CPU: still a spare
		{0, "", 2, 8, 2, ""},  // a cgroup quota of 2 of 8 CPUs: Go's value stands
		{0, "4", 4, 8, 4, ""}, // GOMAXPROCS set: Go's value stands
		{0, "2", 2, 2, 2, ""}, // even when it is the CPUs
		{5, "", 2, 2, 5, ""},  // given
		{5, "4", 4, 8, 5, ""}, // given beats the environment
		{-1, "", 2, 2, 0, "--procs must be 0 (automatic) to 1024, got -1"},
		{1025, "", 2, 2, 0, "--procs must be 0 (automatic) to 1024, got 1025"},
	} {
		got, err := serveProcs(tc.given, tc.env, tc.current, tc.cpus)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("serveProcs(%d, %q, %d, %d): %d, %v; want error %q", tc.given, tc.env, tc.current, tc.cpus, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("serveProcs(%d, %q, %d, %d) = %d, %v; want %d", tc.given, tc.env, tc.current, tc.cpus, got, err, tc.want)
		}
	}
}

// allot serve runs on the processors serveProcs picks: /metrics shows Go's
// own gauge of them.
func TestServeProcsReachTheRuntime(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"flag", nil, []string{"--procs", "3"}, "3"},
		{"env ALLOT_PROCS", []string{"ALLOT_PROCS=4"}, nil, "4"},
		{"env GOMAXPROCS", []string{"GOMAXPROCS=5"}, nil, "5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			httpAddr := ln.Addr().String()
			ln.Close()
			c := startServeLimited(t, 20000, tc.env, append([]string{"--http", httpAddr}, tc.args...)...)
			if addr, err := c.outcome(t); err != nil || addr == "" {
				t.Fatalf("allot serve: %q %v", addr, err)
			}
			var text string
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
				resp, err := http.Get("http://" + httpAddr + "/metrics")
				if err != nil {
					continue
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				text = string(b)
				break
			}
			want := "go_sched_gomaxprocs_threads " + tc.want
			if !strings.Contains(text, want+"\n") {
				t.Fatalf("/metrics lacks %q:\n%.2000s", want, text)
			}
		})
	}
}
