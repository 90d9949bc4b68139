package sim

import (
	"strings"
	"testing"

	"allot/engine"
	"allot/inventory"
)

// The wall clock steps back and forward (NTP, a machine that boots with
// its clock behind after a power cut), and the engine keeps its own time,
// which never goes back: every op's journaled time is the model's, holds
// expire by it, and recovery with a clock that stepped back neither
// brings a hold back nor expires one twice. Faults off, every mode.
func TestClockStepsBackAndForward(t *testing.T) {
	var back, forward int
	for _, mode := range []engine.Durability{engine.DurabilityFsync, engine.DurabilityWrite, engine.DurabilityNone} {
		for seed := uint64(1); seed <= 6; seed++ {
			res := Run(Config{Seed: seed, Ops: 2000, Durability: mode, FaultRate: -1})
			if res.Failed() {
				t.Fatalf("seed %d (%s): %v\nreplay: %s", seed, mode, res.Violations, res.ReplayCommand())
			}
			back, forward = back+res.ClockStepsBack, forward+res.ClockStepsForward
		}
	}
	t.Logf("%d steps back, %d forward", back, forward)
	if back == 0 || forward == 0 {
		t.Fatalf("%d steps back and %d forward in 18 runs: the clock did not step both ways", back, forward)
	}
}

// An engine that stamps a batch with the clock as read, which went back,
// journals ops (and the change stream shows them) at times before those
// of ops it applied earlier, and an expiry at a time before its hold's
// deadline. Its state is right all the same (the state machine keeps its
// time), so only the journaled times show it.
func TestCatchesAStampFromAClockThatWentBack(t *testing.T) {
	caughtWhereSoundPasses(t, Config{Ops: 2000, FaultRate: -1, Broken: BrokenStampRawClock})
}

// checkTime, the oracle of the rules of time, fails each broken rule: it
// is what holds the model (the state machine the engine shares) to
// DESIGN.md, so its power is shown on op sequences no sound state machine
// makes.
func TestCheckTimeCatchesEachBrokenRule(t *testing.T) {
	hold := func(id string, at, ttl int64) applied {
		return applied{op: inventory.Hold(id, ttl, nil), at: at}
	}
	op := func(o inventory.Op, at int64) applied { return applied{op: o, at: at} }
	g := inventory.GroupKey{SKU: "s", Condition: "new", Source: "sim"}
	for _, c := range []struct {
		name string
		ops  []applied
		want string
	}{
		{"sound", []applied{hold("a", 100, 50), hold("b", 120, 10), op(inventory.Expire("b"), 130), op(inventory.Confirm("a"), 140), hold("c", 150, 5), op(inventory.Expire("c"), 160)}, ""},
		{"time went back", []applied{hold("a", 100, 50), op(inventory.Capture(g, 1), 90)}, "went back"},
		{"expired early", []applied{hold("a", 100, 50), op(inventory.Expire("a"), 149)}, "before its deadline"},
		{"expired twice", []applied{hold("a", 100, 50), op(inventory.Expire("a"), 150), op(inventory.Expire("a"), 151)}, "not held"},
		{"held past its deadline", []applied{hold("a", 100, 50), op(inventory.Capture(g, 1), 150)}, "still held"},
		{"expired out of order", []applied{hold("a", 100, 50), hold("b", 100, 20), op(inventory.Expire("a"), 160), op(inventory.Expire("b"), 160)}, "due earlier"},
		{"confirmed past its deadline", []applied{hold("a", 100, 50), op(inventory.Confirm("a"), 150)}, "still held"},
		{"confirmed once expired", []applied{hold("a", 100, 50), op(inventory.Expire("a"), 150), op(inventory.Confirm("a"), 151)}, "not held"},
	} {
		got := checkTime(c.ops)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: checkTime says %q, want %q", c.name, got, c.want)
		}
	}
}
