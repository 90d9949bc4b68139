package relay_test

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"allot/relay"
	"allot/server/servertest"
)

// The pause after a failure doubles with each failure in a row from
// RetryPause up to RetryPauseMax, with jitter (half the pause is drawn),
// and starts over after a success. The relay runs against the real broker
// with its random source and its sleep replaced: the schedule is checked
// exactly, and nothing depends on how long anything took.
func TestRelayAudit13RetryBackoff(t *testing.T) {
	url := sharedAMQP(t)
	name := auditName(t)
	broker(t, url, name)
	s := servertest.Start(t, servertest.Options{})
	stock(t, s.Engine, 0, 1)

	var down atomic.Bool // the broker refuses connections
	down.Store(true)
	var fault faultNet
	dial := func(network, addr string) (net.Conn, error) {
		if down.Load() {
			return nil, errors.New("audit13: the broker is down")
		}
		return fault.dial(network, addr)
	}
	draws := []float64{0, 0.5, 0.25, 0.75}
	var mu sync.Mutex
	var pauses []time.Duration
	drawn := 0
	random := func() float64 {
		mu.Lock()
		defer mu.Unlock()
		d := draws[drawn%len(draws)]
		drawn++
		return d
	}
	sleep := func(ctx context.Context, d time.Duration) {
		mu.Lock()
		pauses = append(pauses, d)
		mu.Unlock()
		// A millisecond, not d: the schedule is read, not waited out.
		select {
		case <-ctx.Done():
		case <-time.After(time.Millisecond):
		}
	}
	recorded := func() []time.Duration {
		mu.Lock()
		defer mu.Unlock()
		return append([]time.Duration(nil), pauses...)
	}
	waitPauses := func(n int) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for len(recorded()) < n {
			if time.Now().After(deadline) {
				t.Fatalf("%d retry pauses after 20 s, want %d", len(recorded()), n)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	const first, most = 100 * time.Millisecond, time.Second
	// want is the pause after the k-th failure in a row, drawing draw.
	want := func(k int, draw float64) time.Duration {
		ceiling := first
		for range k {
			ceiling = min(2*ceiling, most)
		}
		half := ceiling / 2
		return half + time.Duration(draw*float64(ceiling-half))
	}
	check := func(what string, got []time.Duration, from int) {
		t.Helper()
		for i, d := range got {
			if w := want(i, draws[(from+i)%len(draws)]); d != w {
				t.Errorf("%s: pause %d is %v, want %v (schedule %v)", what, i, d, w, got)
			}
		}
	}

	r, err := relay.New(relay.Config{Addr: s.RESPAddr(), AMQPURL: url, Exchange: name, Queue: name,
		Checkpoint: filepath.Join(t.TempDir(), "cp"), Block: 50 * time.Millisecond, ConfirmTimeout: time.Second,
		RetryPause: first, RetryPauseMax: most})
	if err != nil {
		t.Fatal(err)
	}
	r.SetDial(dial)
	r.SetRetryClock(random, sleep)
	stop := runRelay(t, r)
	defer stop()

	// The broker down: failures in a row, past the cap.
	waitPauses(7)
	down.Store(false)
	waitPosition(t, r, 1)
	streak := recorded()
	check("broker down", streak, 0)

	// A success, then publishes that fail: the schedule starts over.
	fault.set(faultFail)
	stock(t, s.Engine, 1, 1)
	waitPauses(len(streak) + 5)
	fault.set(faultNone)
	waitPosition(t, r, 2)
	check("after a success", recorded()[len(streak):len(streak)+5], len(streak))
}

// A retry cap below the first pause, or a negative connect timeout, is
// refused, not taken for a default.
func TestRelayAudit13RetryConfigRefused(t *testing.T) {
	for name, cfg := range map[string]relay.Config{
		"retry pause max below the retry pause": {RetryPause: time.Second, RetryPauseMax: 500 * time.Millisecond},
		"negative retry pause max":              {RetryPauseMax: -time.Second},
		"negative connect timeout":              {ConnectTimeout: -time.Second},
	} {
		cfg.Addr, cfg.AMQPURL, cfg.Checkpoint = "127.0.0.1:7379", "amqp://127.0.0.1:14672/", "cp"
		if _, err := relay.New(cfg); err == nil {
			t.Errorf("a %s was accepted", name)
		}
	}
}
