package bench

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
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
	// Burn CPU for a while: the meter must see at least part of it.
	x := 0
	for start := time.Now(); time.Since(start) < 300*time.Millisecond; {
		for i := range 1000 {
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
		t.Errorf("CPU %.3f s after 0.3 s of spinning", u.CPUSeconds)
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
