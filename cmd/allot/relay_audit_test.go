package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Every bad input to allot relay is refused at once, exit 2, with a
// message naming it: a stray argument, or a flag whose explicit value
// would otherwise be replaced by the default (--batch 0, --block 0,
// --confirm-timeout 0, --exchange "") or make the relay spin.
func TestRelayAuditBadFlags(t *testing.T) {
	// Nothing listens on port 1: a relay that wrongly starts only retries.
	base := []string{"--addr", "127.0.0.1:1", "--amqp", "amqp://guest:guest@127.0.0.1:1/", "--checkpoint", filepath.Join(t.TempDir(), "cp")}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"stray"}, `unexpected argument "stray"`},
		{[]string{"--batch", "0"}, "--batch"},
		{[]string{"--block", "0"}, "--block"},
		{[]string{"--block", "100us"}, "block"},
		{[]string{"--confirm-timeout", "0"}, "--confirm-timeout"},
		{[]string{"--confirm-timeout", "-1s"}, "confirm timeout"},
		{[]string{"--exchange", ""}, "--exchange"},
		{[]string{"--amqp", "127.0.0.1:14672"}, "AMQP URL"},
	} {
		var stdout, stderr bytes.Buffer
		done := make(chan int, 1)
		go func() { done <- run(append(append([]string{"relay"}, base...), tc.args...), &stdout, &stderr) }()
		select {
		case code := <-done:
			if code != 2 || !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("allot relay %s: exit %d, stderr %q; want exit 2 and a message naming %q", strings.Join(tc.args, " "), code, stderr.String(), tc.want)
			}
		case <-time.After(3 * time.Second):
			t.Errorf("allot relay %s: accepted (still running after 3 s)", strings.Join(tc.args, " "))
		}
	}
}
