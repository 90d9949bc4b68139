package main

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"allot/engine"
)

// fsync on a memory file system is said loudly; on a disk, or in another
// mode, it is not.
func TestWarnMemoryFS(t *testing.T) {
	if st, err := os.Stat("/dev/shm"); err != nil || !st.IsDir() {
		t.Skip("no /dev/shm here to stand for a memory file system")
	}
	var log strings.Builder
	logf := func(format string, a ...any) { fmt.Fprintf(&log, format+"\n", a...) }
	warnMemoryFS("/dev/shm/allot-test-never-created", engine.DurabilityFsync, logf)
	if !strings.Contains(log.String(), "WARNING: durability fsync on a memory file system (tmpfs") {
		t.Fatalf("no warning for fsync on /dev/shm:\n%s", log.String())
	}
	log.Reset()
	warnMemoryFS("/dev/shm/allot-test-never-created", engine.DurabilityWrite, logf)
	if strings.Contains(log.String(), "WARNING") {
		t.Fatalf("a warning for write mode:\n%s", log.String())
	}
}
