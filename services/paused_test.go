package services

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Up of a server left paused (SIGSTOP: Pause, or a fault run cut short)
// continues it: it held its port and answered nothing, and Up waited out
// its whole timeout and failed with "no answer". Status says it is paused.
func TestUpContinuesAPausedServer(t *testing.T) {
	cfg := auditConfig(t)
	requireInstalled(t, cfg, Redis)
	ctx := context.Background()
	if err := Up(ctx, cfg, Redis); err != nil {
		t.Fatal(err)
	}
	pid, err := Pause(ctx, cfg, Redis)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGCONT) })
	deadline := time.Now().Add(5 * time.Second)
	for !stoppedBySignal(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("pid %d not stopped 5 s after Pause", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if st := statusOf(t, cfg, Redis); !strings.Contains(st.Detail, "stopped by a signal") {
		t.Errorf("status of a paused server: %+v; want it said paused", st)
	}
	cfg.Timeout = 5 * time.Second
	var log strings.Builder
	cfg.Log = &log
	if err := Up(ctx, cfg, Redis); err != nil {
		t.Fatalf("Up of a paused server: %v", err)
	}
	if stoppedBySignal(pid) {
		t.Fatalf("pid %d still stopped after Up", pid)
	}
	if !strings.Contains(log.String(), "continuing it") {
		t.Errorf("Up did not say it continued the server: %q", log.String())
	}
	if st := statusOf(t, cfg, Redis); st.State != StateRunning || st.PID != pid || st.Detail != "" {
		t.Errorf("after Up: %+v; want the same pid running and answering", st)
	}
}
