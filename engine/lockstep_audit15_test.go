package engine

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"allot/inventory"
	"allot/vfs"
)

// TestRestartsAnswerAsTheLiveEngine: two engines on one clock take the
// same checkout ops (holds with repeated and crossing lines, confirms,
// cancels, keyed captures, releases and orders, hold ids and keys reused
// around a short retention window, the clock jumping forward and back);
// one never restarts, the other closes (or crashes) and reopens every few
// ops, from snapshots and journal tails, in every mode. Every answer must
// be the same: a restart forgets no hold, no key, no expiry.
func TestRestartsAnswerAsTheLiveEngine(t *testing.T) {
	for _, mode := range []Durability{DurabilityFsync, DurabilityWrite, DurabilityNone} {
		for seed := uint64(1); seed <= lockstepSeedsAudit15; seed++ {
			t.Run(fmt.Sprintf("%s/%d", mode, seed), func(t *testing.T) {
				lockstepAudit15(t, mode, seed)
			})
		}
	}
}

func lockstepAudit15(t *testing.T, mode Durability, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 15))
	clock := newFakeClock()
	const retention = 300 * time.Millisecond
	live := mustOpen(t, Config{Dir: "/live", FS: vfs.NewMem(), Durability: mode, Clock: clock, TickInterval: -1, Retention: retention})
	defer live.Close()
	fs := vfs.NewMem()
	cfg := Config{Dir: "/r", FS: fs, Durability: mode, Clock: clock, TickInterval: -1, Retention: retention, SnapshotEveryOps: int64(5 + rng.IntN(40)), SegmentBytes: 8 << 10}
	re := mustOpen(t, cfg)
	defer func() { re.Close() }()

	skus := []string{"a", "b", "c"}
	group := func() inventory.GroupKey { return gk(skus[rng.IntN(len(skus))]) }
	lines := func() []inventory.Demand {
		n := 1 + rng.IntN(4)
		ls := make([]inventory.Demand, n)
		for i := range ls {
			ls[i] = inventory.Demand{Group: group(), N: 1 + rng.Int64N(3)}
		}
		return ls
	}
	for _, s := range skus {
		for _, w := range []string{"w1", "w2"} {
			must(live.Stock(rk(s, w), 20, 1))
			must(re.Stock(rk(s, w), 20, 1))
		}
	}
	for i := 0; i < 1500; i++ {
		var op inventory.Op
		switch rng.IntN(16) {
		case 0, 1, 2:
			op = inventory.Hold(fmt.Sprint("h", rng.IntN(12)), 1+rng.Int64N(400), lines())
		case 3, 4:
			op = inventory.Confirm(fmt.Sprint("h", rng.IntN(12)))
		case 5:
			op = inventory.Cancel(fmt.Sprint("h", rng.IntN(12)))
		case 6:
			op = inventory.HoldGet(fmt.Sprint("h", rng.IntN(12)))
		case 7:
			op = inventory.Capture(group(), 1+rng.Int64N(5))
		case 8:
			g := group()
			op = inventory.Release(g.Row([]string{"w1", "w2", "w3"}[rng.IntN(3)]), 1+rng.Int64N(5))
		case 9:
			op = inventory.Order(lines())
		case 10:
			g := group()
			op = inventory.Stock(g.Row([]string{"w1", "w2"}[rng.IntN(2)]), rng.Int64N(30), 1)
		case 11:
			op = inventory.Available(group())
		case 12, 13:
			switch rng.IntN(10) {
			case 0:
				clock.Advance(-time.Duration(rng.IntN(500)) * time.Millisecond)
			case 1:
				clock.Advance(time.Duration(rng.IntN(3)) * time.Hour)
			default:
				clock.Advance(time.Duration(rng.IntN(150)) * time.Millisecond)
			}
			continue
		case 14:
			if _, err := live.Tick(); err != nil {
				t.Fatal(err)
			}
			if _, err := re.Tick(); err != nil {
				t.Fatal(err)
			}
			settleAudit15(live, re)
			continue
		case 15:
			if mode != DurabilityNone && rng.IntN(2) == 0 {
				// A crash instead: of the process (write mode promises
				// that much), or of the power (fsync mode). Every reply
				// was acknowledged, so nothing may be lost.
				cut := fs.CrashProcess()
				if mode == DurabilityFsync {
					cut = fs.Crash(func(string, int) int { return 0 })
				}
				re.Close() // the dead process's engine, on the old file system
				fs = cut
				cfg.FS = fs
			} else if err := re.Close(); err != nil {
				t.Fatal(err)
			}
			// The restart's clock is not behind a time the live engine
			// answered at. Recovery takes the time of the last
			// journaled frame: a batch that journaled nothing (a read,
			// a NOTFOUND past the window) left no trace of its time,
			// and a clock behind it then makes the restarted engine
			// answer at an earlier time than the live one did (the
			// simulator's rule: recovered at no earlier than the last
			// op's time).
			live.mu.Lock()
			behind := live.state.Now() - clock.Now().UnixMilli()
			live.mu.Unlock()
			if behind > 0 {
				clock.Advance(time.Duration(behind) * time.Millisecond)
			}
			re = mustOpen(t, cfg)
			// Both stamp a batch at that time before it may go back.
			for _, e := range []*Engine{live, re} {
				if _, err := e.Tick(); err != nil {
					t.Fatal(err)
				}
			}
			settleAudit15(live, re)
			continue
		}
		if op.Kind.Keyed() && rng.IntN(2) == 0 {
			op.IdempotencyKey = fmt.Sprint("k", rng.IntN(10))
		}
		want := must(live.Do(op, nil))
		got := must(re.Do(op, nil))
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("op %d %v %+v: restarted engine answers\n%+v\nlive engine\n%+v", i, op.Kind, op, got, want)
		}
	}
	wr, _ := live.Rows()
	gr, _ := re.Rows()
	if !reflect.DeepEqual(wr, gr) {
		t.Fatalf("rows differ:\n%v\n%v", gr, wr)
	}
}

// settleAudit15 waits until a Tick's frame left each engine: in fsync mode a
// frame stays open, at its stamp, until the flusher takes it, and an op
// that comes first joins it (an op's stamp is its frame's). A read waits
// for that flush.
func settleAudit15(es ...*Engine) {
	for _, e := range es {
		must(e.Available(gk("a")))
	}
}

var lockstepSeedsAudit15 = uint64(4)
