package bench

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"allot/inventory"
	"allot/store"
)

func TestMeasureFsyncTimesRealSyncsAndCleansUp(t *testing.T) {
	dir := t.TempDir()
	d, used, err := MeasureFsync(dir, 20)
	if err != nil {
		t.Fatal(err)
	}
	if used != dir || d <= 0 {
		t.Fatalf("MeasureFsync = %v in %q, want a positive time in %q", d, used, dir)
	}
	if names, _ := os.ReadDir(dir); len(names) != 0 {
		t.Fatalf("probe file left behind: %v", names)
	}
	if _, _, err := MeasureFsync(dir+"/missing", 5); err == nil {
		t.Fatal("MeasureFsync in a missing directory: no error")
	}
}

// pingStore's sessions ping by sleeping, or fail.
type pingStore struct {
	delay time.Duration
	fail  bool
	plain bool // sessions without Ping
}

type pingSession struct{ st *pingStore }
type plainSession struct{}

func (s *pingStore) Load(context.Context, []inventory.Row) error   { return nil }
func (s *pingStore) Rows(context.Context) ([]inventory.Row, error) { return nil, nil }
func (s *pingStore) Close() error                                  { return nil }
func (s *pingStore) Session(context.Context) (store.Session, error) {
	if s.plain {
		return plainSession{}, nil
	}
	return pingSession{s}, nil
}
func (plainSession) Capture(context.Context, inventory.GroupKey, int64, []inventory.Line) (inventory.Result, error) {
	return inventory.Result{}, nil
}
func (plainSession) Release(context.Context, inventory.RowKey, int64) (inventory.Result, error) {
	return inventory.Result{}, nil
}
func (plainSession) Close() error { return nil }
func (s pingSession) Capture(context.Context, inventory.GroupKey, int64, []inventory.Line) (inventory.Result, error) {
	return inventory.Result{}, nil
}
func (s pingSession) Release(context.Context, inventory.RowKey, int64) (inventory.Result, error) {
	return inventory.Result{}, nil
}
func (s pingSession) Close() error { return nil }
func (s pingSession) Ping(context.Context) error {
	if s.st.fail {
		return errors.New("no pong")
	}
	time.Sleep(s.st.delay)
	return nil
}

func TestMeasureBound(t *testing.T) {
	ctx := context.Background()
	b, err := MeasureBound(ctx, &pingStore{delay: 2 * time.Millisecond}, t.TempDir(), 4, 1)
	if err != nil {
		t.Fatal(err)
	}
	if b.RTTP50MS < 2 || b.RTTSamples != 4*(BoundRTTSamples/4) || b.FsyncP50MS <= 0 {
		t.Fatalf("bound %+v: want rtt >= 2 ms over %d samples", b, BoundRTTSamples)
	}
	// The two ceilings follow from the two measurements.
	fsync := time.Duration(b.FsyncP50MS * 1e6)
	rtt := time.Duration(b.RTTP50MS * 1e6)
	if want := 4 / (fsync + rtt).Seconds(); b.OpsPerSecFsyncRTT < want*0.999 || b.OpsPerSecFsyncRTT > want*1.001 || b.OpsPerSecFsync <= b.OpsPerSecFsyncRTT {
		t.Fatalf("bound %+v: want workers/(fsync+rtt) = %.0f below workers/fsync", b, want)
	}

	// Without Pinger the round trip is absent and both ceilings agree.
	b, err = MeasureBound(ctx, &pingStore{plain: true}, t.TempDir(), 4, 1)
	if err != nil || b.RTTSamples != 0 || b.OpsPerSecFsync != b.OpsPerSecFsyncRTT {
		t.Fatalf("in-process bound %+v, %v", b, err)
	}
	// A failing ping is an error, not a zero round trip.
	if _, err := MeasureBound(ctx, &pingStore{fail: true}, t.TempDir(), 2, 1); err == nil || !strings.Contains(err.Error(), "no pong") {
		t.Fatalf("failing ping: err %v", err)
	}
	// Pipelined, every worker's ops in flight wait for the same syncs: the
	// ceilings count them all.
	b, err = MeasureBound(ctx, &pingStore{delay: time.Millisecond}, t.TempDir(), 4, 16)
	if err != nil {
		t.Fatal(err)
	}
	fsync = time.Duration(b.FsyncP50MS * 1e6)
	rtt = time.Duration(b.RTTP50MS * 1e6)
	if want := 64 / (fsync + rtt).Seconds(); b.InFlight != 64 || b.OpsPerSecFsyncRTT < want*0.999 || b.OpsPerSecFsyncRTT > want*1.001 {
		t.Fatalf("pipelined bound %+v: want 64 in flight, 64/(fsync+rtt) = %.0f", b, want)
	}
	if _, err := MeasureBound(ctx, &pingStore{plain: true}, t.TempDir(), 4, 0); err == nil || !strings.Contains(err.Error(), "pipeline must be positive") {
		t.Fatalf("pipeline 0: err %v", err)
	}
}

func TestWriteBoundsShowsShareOfBound(t *testing.T) {
	runs := []Result{{Store: "allot", Durability: "fsync", Workers: 16, OpsPerSec: 20000, Status: StatusOK,
		Bound:  &Bound{FsyncP50MS: 0.4, RTTP50MS: 0.1, RTTSamples: 100, Workers: 16, OpsPerSecFsync: 40000, OpsPerSecFsyncRTT: 32000},
		Server: &ServerUsage{CPUMicrosPerOp: 30, BenchCPUMicrosPerOp: 20, CPUs: 2, Span: SpanOps}},
		{Store: "memory", Durability: "write", Status: StatusOK}}
	var out bytes.Buffer
	WriteBounds(&out, runs)
	got := out.String()
	for _, want := range []string{"16 in flight: bound 40000 / 32000 ops/s", "measured 20000 = 50% / 62%", "rtt p50 0.100 ms",
		"CPU per op: server 30.0 µs + bench 20.0 µs on 2 CPUs: at most 40000 ops/s; measured = 50%"} {
		if !strings.Contains(got, want) {
			t.Errorf("WriteBounds output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "memory") {
		t.Errorf("a run without a bound is listed:\n%s", got)
	}
}
