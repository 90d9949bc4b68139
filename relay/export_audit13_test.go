package relay

import (
	"context"
	"time"

	"allot/changes"
)

// SetRetryClock makes r draw its retry jitter from rand and wait out its
// retry pauses with sleep, so that a test sees the schedule.
func (r *Relay) SetRetryClock(rand func() float64, sleep func(ctx context.Context, d time.Duration)) {
	r.rand, r.sleep = rand, sleep
}

// SetBroken makes r a broken relay: each round publishes broken(events)
// instead of the events it read, and checkpoints as if it had published
// them all.
func (r *Relay) SetBroken(broken func([]changes.Event) []changes.Event) { r.broken = broken }
