package cdp

import (
	"os/exec"
	"strings"
	"testing"
)

// The browser's stderr is read (when its pipe closes) while exec's
// goroutine still copies into it: under the race detector a plain
// bytes.Buffer there was a data race (TestBenchServePageInChromium).
func TestAudit22StderrReadWhileWritten(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	var buf lockedBuffer
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
			_ = tail(buf.String(), 100)
		}
	}
	if got := strings.Count(buf.String(), "\n"); got != 2000 {
		t.Fatalf("stderr holds %d lines, want 2000", got)
	}
}
