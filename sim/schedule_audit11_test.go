package sim

import (
	"testing"

	"allot/engine"
)

// The crash schedule has, in every mode, crashes of the process (the page
// cache survives, still unsynced) and power cuts after them; in fsync
// runs, deaths in an fdatasync too. Every fsync and none crash used to be
// a power cut, and a crash of the process made the whole page cache
// durable, so nothing tested what recovery must make durable itself. With
// faults off the schedule repeats: a seed killed in an fdatasync is killed
// there again.
func TestCrashScheduleHasProcessCrashesThenPowerCuts(t *testing.T) {
	for _, mode := range []engine.Durability{engine.DurabilityFsync, engine.DurabilityWrite, engine.DurabilityNone} {
		var crashes, powerCuts, late, kills int
		for seed := uint64(1); seed <= 8; seed++ {
			cfg := Config{Seed: seed, Ops: 2000, Durability: mode, FaultRate: -1}
			res := Run(cfg)
			if res.Failed() {
				t.Fatalf("seed %d (%s): %v\nreplay: %s", seed, mode, res.Violations, res.ReplayCommand())
			}
			if res.Kills > 0 {
				if again := Run(cfg); again.Crashes != res.Crashes || again.PowerCuts != res.PowerCuts || again.Kills != res.Kills || again.Acked != res.Acked {
					t.Fatalf("seed %d (%s) ran twice: %d crashes (%d power cuts, %d kills), %d acknowledged; then %d (%d, %d), %d",
						seed, mode, res.Crashes, res.PowerCuts, res.Kills, res.Acked, again.Crashes, again.PowerCuts, again.Kills, again.Acked)
				}
			}
			crashes, powerCuts, late, kills = crashes+res.Crashes, powerCuts+res.PowerCuts, late+res.PowerCutsAfterProcessCrash, kills+res.Kills
		}
		t.Logf("%s: %d crashes: %d power cuts (%d after a crash of the process), %d crashes of the process (%d in an fdatasync)",
			mode, crashes, powerCuts, late, crashes-powerCuts, kills)
		if powerCuts == 0 || crashes == powerCuts || late == 0 || (mode == engine.DurabilityFsync) != (kills > 0) {
			t.Errorf("%s: the schedule lacks a kind of crash", mode)
		}
	}
}
