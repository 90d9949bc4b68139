package main

import (
	"context"
	"fmt"

	"allot/bench"
	"allot/store"
)

// runProbe measures what a run is read against, around the run: the
// closed-loop bound before a run of durable writes (bench.MeasureBound,
// bench.BoundApplies), and with
// --breakdown the server's per-stage times over the run
// (store.StageReporter).
type runProbe struct {
	j      *benchJob
	ctx    context.Context
	st     store.Store
	cfg    bench.RunConfig
	bound  *bench.Bound
	before bench.Stages
	// after is the stage times read as the timed part ended (timed), nil
	// when the run called no hook (a workload kind whose runner has none:
	// its breakdown spans the whole run, loading and checking included).
	after bench.Stages
}

// startProbe runs before the store's run. A probe that fails is reported
// on stderr and left out: it must not fail the run it describes.
func (j *benchJob) startProbe(ctx context.Context, st store.Store, cfg bench.RunConfig) *runProbe {
	p := &runProbe{j: j, ctx: ctx, st: st, cfg: cfg}
	// Only an ack that waits for an fdatasync has the bound: not a
	// read-only run, nor the memory store (bench.BoundApplies).
	if reg, err := store.Lookup(cfg.Store); err == nil && bench.BoundApplies(reg, j.use(cfg.Store, cfg.Durability)) {
		dir := j.f.dataDir
		if d, ok := st.(store.DataDirer); ok && d.DataDir() != "" {
			dir = d.DataDir()
		}
		// The round trip is a PING on inventory sessions: a store that
		// does not run the reservation workload has none to ping on
		// (rabbitmq's cannot be opened, dtm's make orders only).
		pinged := st
		if !reg.Runs(bench.WorkloadDefault) {
			pinged = nil
		}
		b, err := bench.MeasureBound(ctx, pinged, dir, cfg.Workers, max(cfg.Pipeline, 1))
		if err != nil {
			fmt.Fprintf(j.stderr, "allot bench: %s: measuring the bound: %v\n", cfg.Store, err)
		}
		p.bound = b
	}
	if j.f.breakdown {
		p.before = p.stages()
	}
	return p
}

// stages reads the store's stage times, nil when it has none or the read
// failed (said on stderr).
func (p *runProbe) stages() bench.Stages {
	sr, ok := p.st.(store.StageReporter)
	if !ok {
		return nil
	}
	s, err := sr.Stages(p.ctx)
	if err != nil {
		fmt.Fprintf(p.j.stderr, "allot bench: %s: reading the stage times: %v\n", p.cfg.Store, err)
		return nil
	}
	return bench.StagesOf(s)
}

// timed is the run's bench.RunConfig.Timed: with --breakdown it reads the
// stage times again as the timed part begins and as it ends, so that the
// breakdown leaves out the load and the check.
func (p *runProbe) timed(begin bool) {
	if p.before == nil {
		return
	}
	if begin {
		if s := p.stages(); s != nil {
			p.before = s
		}
		return
	}
	p.after = p.stages()
}

// finish records what the probe measured in res.
func (p *runProbe) finish(ctx context.Context, res *bench.Result) {
	res.Bound = p.bound
	if p.before == nil {
		return
	}
	after := p.after
	if after == nil {
		p.ctx = ctx
		if after = p.stages(); after == nil {
			return
		}
	}
	res.Breakdown = bench.NewBreakdown(p.before, after)
}
