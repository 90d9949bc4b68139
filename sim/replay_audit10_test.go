package sim

import "testing"

// A seed's replay command runs the same simulation. It names the mode the
// seed drew (--durability), and naming it must not change what the seed
// draws after: the mode was drawn only when none was given, so with it
// every later draw shifted (mapping, groups, ops, crash points) and the
// printed replay of a failing seed ran another simulation.
func TestReplayCommandRunsTheSameSimulation(t *testing.T) {
	for seed := uint64(1); seed <= 12; seed++ {
		a := Run(Config{Seed: seed, Ops: 2000, FaultRate: -1})
		b := Run(Config{Seed: seed, Ops: 2000, FaultRate: -1, Durability: a.Durability})
		if a.Crashes != b.Crashes || a.Acked != b.Acked {
			t.Errorf("seed %d: drawn mode %s: %d crashes, %d acknowledged; replayed with --durability %s: %d crashes, %d acknowledged",
				seed, a.Durability, a.Crashes, a.Acked, b.Durability, b.Crashes, b.Acked)
		}
	}
}
