// Package hrsleep sleeps to a deadline with the precision of the kernel's
// high-resolution timers, for the bench's open loop.
//
// time.Sleep of less than a millisecond overshoots by about a millisecond
// on Linux when the runtime has nothing else to run: the thread that waits
// in the network poller waits with a timeout in whole milliseconds
// (measured on a 2-vCPU VM at load 8: 50 µs slept as 1.1 ms at the median).
// An open loop at 20,000 ops/s then sends its ops up to a millisecond late
// and counts that in every response time. A Sleeper waits on a timerfd
// instead: the poller wakes when the fd becomes readable, at the timer's
// expiry, and no thread is held while it waits.
package hrsleep

import (
	"context"
	"time"
)

// Sleeper sleeps to deadlines; one per goroutine (it is not safe for
// concurrent use). The zero value and a Sleeper that could not get a timer
// use time.Sleep.
type Sleeper struct {
	t *timer
}

// New returns a Sleeper with a timer of its own when the system has one.
func New() *Sleeper {
	t, err := newTimer()
	if err != nil {
		return &Sleeper{}
	}
	return &Sleeper{t: t}
}

// Precise reports whether s sleeps on a high-resolution timer.
func (s *Sleeper) Precise() bool { return s.t != nil }

// coarse is how far before a deadline a long sleep hands over to the
// timer: the part before it waits on a runtime timer, cancellably, and
// costs no wake-up per op.
const coarse = 2 * time.Millisecond

// Until returns at deadline or soon after (at once when it has passed), or
// when ctx is done, whichever comes first.
func (s *Sleeper) Until(ctx context.Context, deadline time.Time) {
	d := time.Until(deadline)
	if d <= 0 {
		return
	}
	if d > coarse {
		t := time.NewTimer(d - coarse)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		if d = time.Until(deadline); d <= 0 {
			return
		}
	}
	if s.t == nil || s.t.sleep(d) != nil {
		time.Sleep(time.Until(deadline))
	}
}

// Close releases the timer.
func (s *Sleeper) Close() error {
	if s.t == nil {
		return nil
	}
	err := s.t.close()
	s.t = nil
	return err
}
