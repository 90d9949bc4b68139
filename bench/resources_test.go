package bench

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"allot/store"
)

// selfStore is a store whose server is this process.
type selfStore struct {
	store.Store
	pid int
	err error
}

func (s selfStore) ServerPID(context.Context) (int, error) { return s.pid, s.err }

func TestServerMeterMeasuresCPUAndMemory(t *testing.T) {
	m := StartServerMeter(context.Background(), selfStore{pid: os.Getpid()})
	if m == nil {
		t.Fatal("no meter for this process")
	}
	// Burn 0.3 s of this process's CPU (by its own rusage, not the wall
	// clock: a busy machine may give it little of each second), at most
	// 20 s of wall time: the meter must see at least part of it.
	cpu := func() time.Duration {
		var ru syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	x := 0
	for start, begin := time.Now(), cpu(); cpu()-begin < 300*time.Millisecond && time.Since(start) < 20*time.Second; {
		for i := range 100000 {
			x += i
		}
	}
	_ = x
	u := m.Stop(1000, SpanOps)
	if u == nil {
		t.Fatal("no usage")
	}
	if !u.InProcess || u.PID != os.Getpid() {
		t.Errorf("usage %+v: want this process, in process", u)
	}
	if u.CPUSeconds < 0.05 {
		t.Errorf("CPU %.3f s after 0.3 s of spinning (by rusage)", u.CPUSeconds)
	}
	if got := u.CPUSeconds * 1e6 / 1000; u.CPUMicrosPerOp != got {
		t.Errorf("cpu µs/op %v, want %v", u.CPUMicrosPerOp, got)
	}
	if u.RSSPeakBytes < 1<<20 || u.Samples < 2 {
		t.Errorf("peak RSS %d bytes over %d samples", u.RSSPeakBytes, u.Samples)
	}
}

func TestServerMeterWithoutServer(t *testing.T) {
	if m := StartServerMeter(context.Background(), nil); m != nil {
		t.Error("a store without the capability got a meter")
	}
	if m := StartServerMeter(context.Background(), selfStore{err: errors.New("remote host")}); m != nil {
		t.Error("a store that cannot tell its pid got a meter")
	}
	if m := StartServerMeter(context.Background(), selfStore{pid: 1 << 30}); m != nil {
		t.Error("a pid that is no process got a meter")
	}
	var m *ServerMeter
	if u := m.Stop(10, SpanOps); u != nil {
		t.Error("a nil meter measured something")
	}
}

func TestWriteTableServerColumns(t *testing.T) {
	runs := []Result{
		{Store: "embedded", Durability: "fsync", Workers: 4, Status: StatusOK, Ops: 1000, Check: CheckResult{OK: true},
			Server: &ServerUsage{PID: 1, CPUSeconds: 0.5, CPUMicrosPerOp: 500, RSSPeakBytes: 64 << 20, InProcess: true}},
		{Store: "redis", Durability: "fsync", Workers: 4, Status: StatusOK, Ops: 1000, Check: CheckResult{OK: true}},
	}
	var b bytes.Buffer
	if err := WriteTable(&b, runs); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"cpu µs/op", "server MB", "500.0", "0.50", "64", "includes the bench's own"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	b.Reset()
	WriteTable(&b, runs[1:])
	if strings.Contains(b.String(), "cpu µs/op") {
		t.Errorf("resource columns without any measured run:\n%s", b.String())
	}
}
