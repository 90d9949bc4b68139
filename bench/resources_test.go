package bench

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"runtime"
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
	burnCPU()
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
	// In process, the server's CPU is the bench's: nothing apart, and no
	// CPU bound (it would count the same time twice).
	if u.BenchCPUSeconds != 0 || u.OpsPerSecCPU() != 0 {
		t.Errorf("in-process usage has bench CPU %v s and a CPU bound %v", u.BenchCPUSeconds, u.OpsPerSecCPU())
	}
}

// burnCPU burns 0.3 s of this process's CPU (by its own rusage, not the
// wall clock: a busy machine may give it little of each second), at most
// 20 s of wall time.
func burnCPU() {
	x := 0
	for start, begin := time.Now(), selfCPU(); selfCPU()-begin < 300*time.Millisecond && time.Since(start) < 20*time.Second; {
		for i := range 100000 {
			x += i
		}
	}
	_ = x
}

func TestServerMeterMeasuresTheBenchBesideAServer(t *testing.T) {
	// A server that is another process and takes no CPU, while this
	// process (the bench) burns some: the meter puts that on the bench.
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	m := StartServerMeter(context.Background(), selfStore{pid: cmd.Process.Pid})
	if m == nil {
		t.Fatal("no meter for a child process")
	}
	burnCPU()
	u := m.Stop(1000, SpanOps)
	if u == nil || u.InProcess {
		t.Fatalf("usage %+v: want another process's", u)
	}
	if u.BenchCPUSeconds < 0.05 || u.CPUSeconds > u.BenchCPUSeconds {
		t.Errorf("bench CPU %.3f s, server %.3f s after the bench spun 0.3 s (by rusage) beside an idle server", u.BenchCPUSeconds, u.CPUSeconds)
	}
	if got := u.BenchCPUSeconds * 1e6 / 1000; u.BenchCPUMicrosPerOp != got {
		t.Errorf("bench cpu µs/op %v, want %v", u.BenchCPUMicrosPerOp, got)
	}
	if u.CPUs != runtime.NumCPU() {
		t.Errorf("CPUs %d, want %d", u.CPUs, runtime.NumCPU())
	}
	want := float64(u.CPUs) * 1e6 / (u.CPUMicrosPerOp + u.BenchCPUMicrosPerOp)
	if got := u.OpsPerSecCPU(); got != want {
		t.Errorf("CPU bound %v, want %v", got, want)
	}
	u.Span = SpanRun
	if got := u.OpsPerSecCPU(); got != 0 {
		t.Errorf("CPU bound %v over a whole store run (loading included), want none", got)
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
