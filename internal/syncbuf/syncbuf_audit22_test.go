package syncbuf

import (
	"os/exec"
	"strings"
	"testing"
)

// A child process's stderr, read while exec's goroutine still copies into
// it (cdp's browser, whose pipe closes before its last words): under the
// race detector a plain bytes.Buffer there was a data race
// (TestBenchServePageInChromium).
func TestAudit22StderrReadWhileWritten(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	var buf Buffer
	cmd := exec.Command(sh, "-c", `i=0; while [ $i -lt 2000 ]; do echo "line $i" >&2; i=$((i+1)); done`)
	cmd.Stderr = &buf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for reading := true; reading; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			reading = false
		default:
			_ = buf.String()
		}
	}
	if got := strings.Count(buf.String(), "\n"); got != 2000 {
		t.Fatalf("stderr holds %d lines, want 2000", got)
	}
}
