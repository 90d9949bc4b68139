package hrsleep

import (
	"context"
	"sort"
	"testing"
	"time"
)

// Until never returns before its deadline, returns at once for one that
// passed, and a Sleeper serves many sleeps in turn.
func TestUntilNeverEarly(t *testing.T) {
	s := New()
	defer s.Close()
	if !s.Precise() {
		t.Log("no high-resolution timer here; time.Sleep stands in")
	}
	for _, d := range []time.Duration{0, -time.Second, time.Microsecond, 30 * time.Microsecond, 300 * time.Microsecond, 2 * time.Millisecond} {
		for i := 0; i < 20; i++ {
			deadline := time.Now().Add(d)
			s.Until(context.Background(), deadline)
			if now := time.Now(); now.Before(deadline) {
				t.Fatalf("Until(now+%v) returned %v early", d, deadline.Sub(now))
			}
		}
	}
	start := time.Now()
	s.Until(context.Background(), start.Add(-time.Hour))
	if took := time.Since(start); took > time.Second {
		t.Fatalf("a passed deadline took %v", took)
	}
}

func TestCloseFallsBack(t *testing.T) {
	s := New()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s.Precise() {
		t.Fatal("a closed Sleeper still has its timer")
	}
	deadline := time.Now().Add(100 * time.Microsecond)
	s.Until(context.Background(), deadline)
	if time.Now().Before(deadline) {
		t.Fatal("the fallback returned early")
	}
	var zero Sleeper
	zero.Until(context.Background(), time.Now().Add(10*time.Microsecond))
}

// BenchmarkOvershoot reports how late a 100 µs sleep returns, at the
// median and p99, for the timer and for time.Sleep (go test -bench
// Overshoot ./internal/hrsleep).
func BenchmarkOvershoot(b *testing.B) {
	for _, tc := range []struct {
		name  string
		sleep func(time.Time)
	}{
		{"timerfd", func(d time.Time) { New().Until(context.Background(), d) }},
		{"time.Sleep", func(d time.Time) { time.Sleep(time.Until(d)) }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			late := make([]time.Duration, 0, b.N)
			for i := 0; i < b.N; i++ {
				deadline := time.Now().Add(100 * time.Microsecond)
				tc.sleep(deadline)
				late = append(late, time.Since(deadline))
			}
			sort.Slice(late, func(i, j int) bool { return late[i] < late[j] })
			b.ReportMetric(float64(late[len(late)/2].Microseconds()), "p50-late-µs")
			b.ReportMetric(float64(late[len(late)*99/100].Microseconds()), "p99-late-µs")
		})
	}
}

// A long sleep ends when its context is done.
func TestUntilCancelled(t *testing.T) {
	s := New()
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	start := time.Now()
	s.Until(ctx, start.Add(time.Hour))
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("a cancelled sleep of an hour took %v", took)
	}
	if ctx.Err() == nil {
		t.Fatal("Until returned before the deadline and before the cancel")
	}
}
