package engine

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"sync"
	"testing"
	"time"

	"allot/inventory"
	"allot/vfs"
)

// fakeClock is a clock the test moves by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.UnixMilli(1_700_000_000_000)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func line(sku string, n int64) inventory.Demand { return inventory.Demand{Group: gk(sku), N: n} }

// TestHoldExpiresByTheEngineClock: a hold expires in the first batch whose
// stamp reaches its deadline, by the injected clock, not before; its units
// come back; a confirm after that is EXPIRED.
func TestHoldExpiresByTheEngineClock(t *testing.T) {
	clock := newFakeClock()
	e := mustOpen(t, Config{Dir: t.TempDir(), Clock: clock, TickInterval: -1})
	defer e.Close()
	must(e.Stock(rk("a", "w1"), 5, 1))
	res := must(e.Hold("h1", 100*time.Millisecond, []inventory.Demand{line("a", 2), line("a", 1)}))
	if res.Code != inventory.CodeOK || res.ExpiresAt != clock.Now().UnixMilli()+100 || len(res.Allocations) != 1 || res.Allocations[0].Count != 3 {
		t.Fatalf("hold: %+v", res)
	}
	if got := must(e.Available(gk("a"))).Count; got != 2 {
		t.Fatalf("available %d after holding 3 of 5", got)
	}
	clock.Advance(99 * time.Millisecond)
	if _, err := e.Tick(); err != nil {
		t.Fatal(err)
	}
	if st := must(e.HoldGet("h1")).State; st != inventory.HoldHeld {
		t.Fatalf("state %v one millisecond before the deadline", st)
	}
	clock.Advance(time.Millisecond)
	if _, err := e.Tick(); err != nil {
		t.Fatal(err)
	}
	if st := must(e.HoldGet("h1")).State; st != inventory.HoldExpired {
		t.Fatalf("state %v at the deadline", st)
	}
	if got := must(e.Available(gk("a"))).Count; got != 5 {
		t.Fatalf("available %d after expiry, want 5", got)
	}
	if c := must(e.Confirm("h1")).Code; c != inventory.CodeExpired {
		t.Fatalf("confirm after expiry: %v", c)
	}
	// A confirm of a hold past its deadline that no tick expired yet: the
	// engine expires it first.
	must(e.Hold("h2", 10*time.Millisecond, []inventory.Demand{line("a", 5)}))
	clock.Advance(time.Second)
	if c := must(e.Confirm("h2")).Code; c != inventory.CodeExpired {
		t.Fatalf("confirm past the deadline: %v", c)
	}
	if s := e.Stats().State; s.Expired != 2 || s.HoldsActive != 0 {
		t.Fatalf("stats %+v", s)
	}
}

// TestManyHoldsExpireInBoundedBatches: holds sharing one deadline expire a
// bounded slice per batch, so no batch holds the writer for long; every
// one of them expires (100,000 here; BenchmarkExpireMillionHolds runs
// 1,000,000 and reports the longest batch). The time of each batch is
// logged, not asserted: the machine's load decides it.
func TestManyHoldsExpireInBoundedBatches(t *testing.T) {
	n := 100_000
	maxBatch, batches := expireHolds(t, n)
	t.Logf("%d holds expired in %d batches, the longest %v", n, batches, maxBatch)
}

func expireHolds(t testing.TB, n int) (time.Duration, int) {
	clock := newFakeClock()
	e, err := Open(Config{Dir: t.TempDir(), Durability: DurabilityNone, Clock: clock, TickInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	must(e.Stock(rk("a", "w1"), int64(n), 1))
	lines := []inventory.Demand{line("a", 1)}
	for i := range n {
		if res := must(e.Hold(fmt.Sprintf("h%d", i), time.Second, lines)); res.Code != inventory.CodeOK {
			t.Fatalf("hold %d: %+v", i, res)
		}
	}
	clock.Advance(time.Second)
	var maxBatch time.Duration
	batches := 0
	for {
		before := e.Stats().State.Expired
		start := time.Now()
		backlog, err := e.Tick()
		d := time.Since(start)
		if err != nil {
			t.Fatal(err)
		}
		batches++
		maxBatch = max(maxBatch, d)
		if got := e.Stats().State.Expired - before; got > expirySliceMax {
			t.Fatalf("one batch expired %d holds, over the bound %d", got, expirySliceMax)
		}
		if !backlog {
			break
		}
	}
	if s := e.Stats().State; s.Expired != int64(n) || s.HoldsActive != 0 {
		t.Fatalf("after the batches: %+v, want %d expired", s, n)
	}
	if got := must(e.Available(gk("a"))).Count; got != int64(n) {
		t.Fatalf("available %d, want %d", got, n)
	}
	return maxBatch, batches
}

// BenchmarkExpireMillionHolds reports the longest batch while 1,000,000
// holds with one deadline expire (target: under 50 ms).
//
//	go test ./engine -run XXX -bench ExpireMillionHolds -benchtime 1x
func BenchmarkExpireMillionHolds(b *testing.B) {
	for range b.N {
		maxBatch, batches := expireHolds(b, 1_000_000)
		b.ReportMetric(float64(maxBatch.Microseconds())/1000, "max-batch-ms")
		b.ReportMetric(float64(batches), "batches")
	}
}

// TestReplayReproducesCheckout: random holds, confirms, cancels, orders,
// keyed captures and time, with snapshots along the way; after Close and
// Open, every hold reads the same, every idempotency key answers the same
// repeat, and the rows are the same. A passed deadline expires at the same
// point on replay as it did live.
func TestReplayReproducesCheckout(t *testing.T) {
	var replayed int64
	defer func() {
		if !t.Failed() && replayed == 0 {
			t.Error("no mode replayed any journal tail: the test covered snapshots only")
		}
	}()
	for _, mode := range []Durability{DurabilityFsync, DurabilityWrite, DurabilityNone} {
		t.Run(string(mode), func(t *testing.T) {
			clock := newFakeClock()
			dir := t.TempDir()
			cfg := Config{Dir: dir, Durability: mode, Clock: clock, TickInterval: -1, SnapshotEveryOps: 150, SegmentBytes: 16 << 10}
			e := mustOpen(t, cfg)
			rng := rand.New(rand.NewPCG(3, 4))
			for _, w := range []string{"w1", "w2", "w3"} {
				must(e.Stock(rk("a", w), 40, 1))
				must(e.Stock(rk("b", w), 40, 1))
			}
			type keyed struct {
				op  inventory.Op
				res inventory.Result
			}
			var keyedOps []keyed
			ids := map[string]bool{}
			for i := 0; i < 2000; i++ {
				id := fmt.Sprintf("h%d", rng.IntN(200))
				switch rng.IntN(7) {
				case 0, 1:
					must(e.Hold(id, time.Duration(1+rng.IntN(200))*time.Millisecond, []inventory.Demand{line("a", 1+rng.Int64N(2)), line("b", 1)}))
					ids[id] = true
				case 2:
					must(e.Confirm(id))
				case 3:
					must(e.Cancel(id))
				case 4:
					op := inventory.Capture(gk([]string{"a", "b"}[rng.IntN(2)]), 1)
					op.IdempotencyKey = fmt.Sprintf("k%d", rng.IntN(100))
					res := must(e.Do(op, nil))
					keyedOps = append(keyedOps, keyed{op, res})
				case 5:
					op := inventory.Release(rk("a", "w2"), 1)
					op.IdempotencyKey = fmt.Sprintf("r%d", i)
					must(e.Do(op, nil))
				case 6:
					clock.Advance(time.Duration(rng.IntN(50)) * time.Millisecond)
					if _, err := e.Tick(); err != nil {
						t.Fatal(err)
					}
				}
			}
			for i := range keyedOps {
				keyedOps[i].res = must(e.Do(keyedOps[i].op, nil))
			}
			holds := map[string]inventory.Result{}
			for id := range ids {
				holds[id] = must(e.HoldGet(id))
			}
			rows, _ := e.Rows()
			stats := e.Stats().State
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
			e = mustOpen(t, cfg)
			defer e.Close()
			// Snapshots are taken at flushes; whether the last one covers
			// the end depends on timing, so the tail is counted over the
			// modes (above), not required of each.
			rec := e.Recovery()
			if rec.SnapshotLSN == 0 {
				t.Fatalf("recovery %+v: want a snapshot", rec)
			}
			replayed += rec.Replayed
			rows2, _ := e.Rows()
			if !reflect.DeepEqual(rows, rows2) {
				t.Fatal("rows differ after reopening")
			}
			for id, want := range holds {
				if got := must(e.HoldGet(id)); !reflect.DeepEqual(got, want) {
					t.Fatalf("hold %s after reopening: %+v, was %+v", id, got, want)
				}
			}
			repeats := 0
			for _, k := range keyedOps {
				got := must(e.Do(k.op, nil))
				if !reflect.DeepEqual(got, k.res) {
					t.Fatalf("key %s answers %+v after reopening, %+v before", k.op.IdempotencyKey, got, k.res)
				}
				if got.Repeat {
					repeats++
				}
			}
			if repeats == 0 {
				t.Fatal("no keyed op was answered as a repeat")
			}
			if s := e.Stats().State; s.HoldsActive != stats.HoldsActive {
				t.Fatalf("holds active %d after reopening, was %d", s.HoldsActive, stats.HoldsActive)
			}
		})
	}
}

// TestDeadlinePassedWhileDownExpiresOnStart: a hold whose deadline passed
// while the engine was closed expires within a second of Open, by the
// system clock and the real ticker.
func TestDeadlinePassedWhileDownExpiresOnStart(t *testing.T) {
	dir := t.TempDir()
	e := mustOpen(t, Config{Dir: dir})
	must(e.Stock(rk("a", "w1"), 3, 1))
	must(e.Hold("h", 50*time.Millisecond, []inventory.Demand{line("a", 3)}))
	e.Close()
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	e = mustOpen(t, Config{Dir: dir})
	defer e.Close()
	for must(e.HoldGet("h")).State != inventory.HoldExpired {
		if time.Since(start) > 5*time.Second {
			t.Fatal("the hold did not expire within 5 s of Open")
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Logf("expired %v after Open", time.Since(start))
	if got := must(e.Available(gk("a"))).Count; got != 3 {
		t.Fatalf("available %d, want 3", got)
	}
}

// TestExpiryIsJournaledNotRecomputed: replay does not expire holds by the
// clock of the restart, only where the journal says: a hold that had not
// expired when the engine closed is still held on the replayed state until
// the new writer's first batch.
func TestExpiryIsJournaledNotRecomputed(t *testing.T) {
	clock := newFakeClock()
	fs := vfs.NewMem()
	cfg := Config{Dir: "/d", FS: fs, Clock: clock, TickInterval: -1}
	e := mustOpen(t, cfg)
	must(e.Stock(rk("a", "w1"), 3, 1))
	must(e.Hold("h", 100*time.Millisecond, []inventory.Demand{line("a", 1)}))
	e.Close()
	clock.Advance(time.Hour)
	e = mustOpen(t, cfg)
	defer e.Close()
	if got := e.Stats().State.HoldsActive; got != 1 {
		t.Fatalf("holds active %d on the replayed state, want 1", got)
	}
	if _, err := e.Tick(); err != nil {
		t.Fatal(err)
	}
	if got := e.Stats().State; got.HoldsActive != 0 || got.Expired != 1 {
		t.Fatalf("after the first batch: %+v", got)
	}
}

// TestReplayKeepsTheRetentionWindow: a hold id reused after its record's
// retention window is a new hold; replay must use the same window, or it
// would take the reuse for a repeat (and refuse the journal).
func TestReplayKeepsTheRetentionWindow(t *testing.T) {
	clock := newFakeClock()
	cfg := Config{Dir: t.TempDir(), Clock: clock, TickInterval: -1, Retention: 100 * time.Millisecond}
	e := mustOpen(t, cfg)
	must(e.Stock(rk("a", "w1"), 5, 1))
	lines := []inventory.Demand{line("a", 2)}
	must(e.Hold("h", time.Minute, lines))
	must(e.Cancel("h"))
	clock.Advance(time.Second)
	if res := must(e.Hold("h", time.Minute, lines)); res.Code != inventory.CodeOK || res.Repeat {
		t.Fatalf("hold id reused past the window: %+v", res)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = mustOpen(t, cfg)
	defer e.Close()
	if res := must(e.HoldGet("h")); res.State != inventory.HoldHeld {
		t.Fatalf("after replay: %+v", res)
	}
	if got := must(e.Available(gk("a"))).Count; got != 3 {
		t.Fatalf("available %d after replay, want 3", got)
	}
}
