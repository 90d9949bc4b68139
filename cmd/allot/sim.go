package main

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"path"
	"strconv"
	"time"

	"allot/engine"
	"allot/sim"
)

func init() {
	register(command{
		name:    "sim",
		summary: "deterministic simulation: seeded workload, clock, faults, crashes; checks every recovery",
		run:     runSim,
	})
}

const simAbout = `Runs the engine on a simulated file system, one seed per run: the seed
decides the ops (holds, expiry and idempotency keys included), their
submission order, the clock (with steps back and forward, as NTP makes),
storage faults (EIO, ENOSPC on creates, opens, reads, writes, syncs,
directory syncs, renames, removes, truncates, maps and unmaps; a failed
directory sync leaves its entries unknown until a remount) and the crash
points (between requests, in an fdatasync, and, with faults on, at each
step of writing a snapshot or retiring a segment), where a power cut
keeps an arbitrary subset of the unsynced pages. After every recovery it checks the promises
against a reference model (see sim/doc.go). A failing seed is printed with
the one command that replays it; the exit status is then 1.`

func runSim(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("sim", "[flags]", simAbout, stderr)
	var (
		seeds      int
		seed       uint64
		ops        int
		durability string
		faultRate  float64
		dataDir    string
		stepKills  float64
	)
	fs.IntVar(&seeds, "seeds", 100, "number of seeds to run, from --seed up (from a random one when --seed is 0)")
	fs.Uint64Var(&seed, "seed", 0, "the first seed (0: a random one, printed)")
	fs.IntVar(&ops, "ops", sim.OpsDefault, "ops per seed")
	fs.StringVar(&durability, "durability", "", "fsync, write or none (default: each seed picks one)")
	fs.Float64Var(&faultRate, "fault-rate", sim.FaultRateDefault, "chance that one file-system call fails, from 0 (none) to 1")
	fs.Float64Var(&stepKills, "step-kill-rate", sim.StepKillRateDefault, "chance that the process dies at one step of writing a snapshot or retiring a segment, or at a rename, remove or directory sync, from 0 (never) to 1")
	fs.StringVar(&dataDir, "dir", "/data", "the data directory in the simulated file system (absolute; its missing parents are made at the first open)")
	if err := parseFlags(fs, args, stdout); err != nil {
		return err
	}
	if seeds < 1 || ops < 1 {
		return &exitError{code: 2, msg: fmt.Sprintf("--seeds and --ops must be positive, got --seeds %d --ops %d", seeds, ops)}
	}
	// !(0 <= x <= 1) also catches NaN, which would fail every call.
	if !(faultRate >= 0 && faultRate <= 1) {
		return &exitError{code: 2, msg: fmt.Sprintf("--fault-rate must be from 0 to 1 (a probability), got %v", faultRate)}
	}
	// Seeds run from --seed up; past 2^64-1 they would wrap to 0, which
	// --seed cannot replay (0 there asks for a random seed).
	if seed > math.MaxUint64-uint64(seeds-1) {
		return &exitError{code: 2, msg: fmt.Sprintf("--seed %d with --seeds %d runs past the largest seed, %d", seed, seeds, uint64(math.MaxUint64))}
	}
	if !path.IsAbs(dataDir) || path.Clean(dataDir) == "/" {
		return &exitError{code: 2, msg: fmt.Sprintf("--dir must be an absolute path below /, got %q", dataDir)}
	}
	if !(stepKills >= 0 && stepKills <= 1) {
		return &exitError{code: 2, msg: fmt.Sprintf("--step-kill-rate must be from 0 to 1 (a probability), got %v", stepKills)}
	}
	simStepKills := stepKills
	if simStepKills == 0 {
		simStepKills = -1 // sim.Config's "none"
	}
	var d engine.Durability
	if durability != "" {
		var err error
		if d, err = engine.ParseDurability(durability); err != nil {
			return &exitError{code: 2, msg: err.Error()}
		}
	}
	simRate := faultRate
	if simRate == 0 {
		simRate = -1 // sim.Config's "none"; its zero is the default rate
	}
	if seed == 0 {
		seed = rand.Uint64() >> 1
		fmt.Fprintf(stdout, "first seed %d\n", seed)
	}
	start := time.Now()
	var total, acked, crashes, stepCrashes, clockSteps, faults, failed int
	for i := 0; i < seeds; i++ {
		res := sim.Run(sim.Config{Seed: seed + uint64(i), Ops: ops, Durability: d, FaultRate: simRate, StepKillRate: simStepKills, Dir: path.Clean(dataDir)})
		total += res.Ops
		acked += res.Acked
		crashes += res.Crashes
		stepCrashes += res.StepKills
		clockSteps += res.ClockStepsBack + res.ClockStepsForward
		faults += res.Faults
		if res.Failed() {
			failed++
			fmt.Fprintf(stdout, "FAILED seed %d (%s): %v\n  replay: %s\n", res.Seed, res.Durability, res.Violations, simReplayCommand(res, faultRate))
		}
	}
	secs := time.Since(start).Seconds()
	fmt.Fprintf(stdout, "%d seeds, %d ops (%d acknowledged), %d crashes (%d at a step of a snapshot or a retirement), %d clock steps, %d injected faults, %d failed; %.1fs, %.0f simulated ops/s\n",
		seeds, total, acked, crashes, stepCrashes, clockSteps, faults, failed, secs, float64(total)/secs)
	if failed > 0 {
		return &exitError{code: 1, msg: fmt.Sprintf("%d of %d seeds broke a promise", failed, seeds)}
	}
	return nil
}

// simReplayCommand is the command that runs res's seed again: sim's own,
// plus the fault rate when it is not the default, since the faults a seed
// draws depend on it.
func simReplayCommand(res *sim.Result, faultRate float64) string {
	cmd := res.ReplayCommand()
	if faultRate != sim.FaultRateDefault {
		cmd += " --fault-rate " + strconv.FormatFloat(faultRate, 'g', -1, 64)
	}
	return cmd
}
