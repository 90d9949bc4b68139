package bench

import (
	"context"
	"testing"
	"time"

	"allot/inventory"
	"allot/store"
	"allot/store/memory"
)

// TestAudit13ThroughputKeepsAnHour: the runner's per-second counts grew
// by one a second for as long as a run lasted (a day's run: 86,400 of
// them in its JSON), where rw's meter and the bench service keep an hour
// and fold later seconds into the last. A run driven through three hours
// of ticks keeps ThroughputSecondsMax counts, and they still sum to its
// ops. The store lets an op through only when the test says, so that ops
// complete throughout the ticks, not all in the first one.
func TestAudit13ThroughputKeepsAnHour(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w := genWorkload(t, "seed", 300)
	gate := make(chan struct{})
	pass := func(ctx context.Context) error {
		select {
		case <-gate:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	st := &faulty{Store: memory.New(),
		capture: func(se store.Session, ctx context.Context, g inventory.GroupKey, n int64, lines []inventory.Line) (inventory.Result, error) {
			if err := pass(ctx); err != nil {
				return inventory.Result{}, err
			}
			return se.Capture(ctx, g, n, lines)
		},
		release: func(se store.Session, ctx context.Context, k inventory.RowKey, n int64) (inventory.Result, error) {
			if err := pass(ctx); err != nil {
				return inventory.Result{}, err
			}
			return se.Release(ctx, k, n)
		}}
	p, err := NewPlan(w)
	if err != nil {
		t.Fatal(err)
	}
	cfg := RunConfig{Workers: 1, Store: "memory"}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := st.Load(ctx, w.Initial); err != nil {
		t.Fatal(err)
	}
	r := newRunner(p, &cfg)
	ticks := make(chan time.Time)
	r.secondTicks = ticks
	defer r.closeSessions()
	if err := r.openSessions(ctx, st); err != nil {
		t.Fatal(err)
	}
	ran := make(chan error, 1)
	go func() { ran <- r.run(ctx) }()
	const seconds = 3 * 3600
	let := 0 // calls let through; the worker always waits for the next
	for i := range seconds {
		ticks <- time.Time{}
		if i%50 == 0 && let < len(w.Ops)/2 {
			gate <- struct{}{}
			let++
		}
	}
	close(gate) // the rest go through at once
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
	res := &Result{}
	if err := r.fill(res); err != nil {
		t.Fatal(err)
	}
	if len(res.Throughput) > ThroughputSecondsMax {
		t.Errorf("a run of %d seconds keeps %d per-second counts, want at most %d", seconds, len(res.Throughput), ThroughputSecondsMax)
	}
	var sum int64
	for _, n := range res.Throughput {
		sum += n
	}
	if sum != res.Ops || res.Ops != int64(len(w.Ops)) {
		t.Errorf("the per-second counts sum to %d; the run completed %d ops of %d", sum, res.Ops, len(w.Ops))
	}
}
