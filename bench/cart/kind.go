package cart

import (
	"context"
	"flag"
	"fmt"
	"time"

	"allot/bench"
	"allot/store"
)

// Kind is the bench.Kind of the checkout and order workloads: its flags,
// and Run generating the carts and handing them to the runner. The common
// --pipeline N > 1 runs checkout with N new carts per round per worker on
// stores whose sessions implement store.CheckoutPipeliner (pipeline.go)
// and is refused on the others.
type Kind struct {
	mode Mode
	// Flags.
	ttl           time.Duration
	lines         int
	confirm       float64
	cancel        float64
	resend        float64
	expiryWait    time.Duration
	poll          time.Duration
	sweepInterval time.Duration
	sweepBatch    int
	branches      string
}

// NewKind returns the kind of mode with its defaults.
func NewKind(mode Mode) *Kind { return &Kind{mode: mode} }

// Defaults of the kinds.
const (
	CartsDefault = 20000
	// OrderLinesDefault: the distributed-transaction seed's orders of two
	// lines.
	OrderLinesDefault = 2
)

// RegisterFlags adds the kind's flags.
func (k *Kind) RegisterFlags(fs *flag.FlagSet) {
	if k.mode == ModeOrder {
		fs.IntVar(&k.lines, "lines", OrderLinesDefault, "lines per order, 1..5")
		fs.StringVar(&k.branches, "branches", "capture", "dtm: capture (each saga step captures on Redis, its compensation releases) or empty (steps that do nothing: dtm's own cost, as its published benchmark ran)")
	} else {
		fs.IntVar(&k.lines, "lines", 0, "lines per cart, 1..5; 0 draws 1..5 per cart")
		fs.DurationVar(&k.ttl, "ttl", TTLDefault, "hold time to live (whole milliseconds, 1ms..168h); abandoned carts expire after it")
		fs.Float64Var(&k.confirm, "confirm", 0.7, "share of carts whose hold is confirmed")
		fs.Float64Var(&k.cancel, "cancel", 0.2, "share of carts whose hold is cancelled (the rest are abandoned and must expire)")
		fs.DurationVar(&k.expiryWait, "expiry-wait", ExpiryWaitDefault, "how long past its deadline an abandoned hold may stay held before the check calls it stuck")
		fs.DurationVar(&k.poll, "expiry-poll", PollDefault, "pause between two looks at a hold past its deadline (the resolution of the expiry lag)")
		fs.DurationVar(&k.sweepInterval, "sweep-interval", store.SweepIntervalDefault, "how often a peer's sweeper looks for holds past their deadline (stores that expire by their own clock ignore it)")
		fs.IntVar(&k.sweepBatch, "sweep-batch", store.SweepBatchDefault, "holds one sweeper pass expires in one transaction or script")
	}
	fs.Float64Var(&k.resend, "resend", 0.05, "share of mutations re-sent with the same idempotency key after a simulated timeout")
}

func (k *Kind) params(cfg bench.KindConfig) Params {
	p := Params{Preset: cfg.Preset, Carts: cfg.Ops, Seed: cfg.Seed, Lines: k.lines, ConfirmShare: k.confirm, CancelShare: k.cancel, ResendShare: k.resend}
	if p.Preset == "" {
		p.Preset = PresetHot
	}
	if p.Carts == 0 {
		p.Carts = CartsDefault
	}
	if k.mode == ModeOrder {
		p.ConfirmShare, p.CancelShare = 1, 0
	}
	return p
}

// Validate checks the flags.
func (k *Kind) Validate(cfg bench.KindConfig) error {
	p := k.params(cfg)
	if k.mode == ModeOrder && k.lines == 0 {
		return fmt.Errorf("--lines must be from 1 to %d", LinesMax)
	}
	if err := p.Validate(); err != nil {
		return err
	}
	if k.mode == ModeCheckout {
		if k.ttl < time.Millisecond || k.ttl > store.HoldTTLMax || k.ttl%time.Millisecond != 0 {
			return fmt.Errorf("--ttl must be whole milliseconds from 1ms to 168h, got %v", k.ttl)
		}
		if k.expiryWait <= 0 || k.poll <= 0 {
			return fmt.Errorf("--expiry-wait and --expiry-poll must be positive")
		}
		sc := k.sweep()
		if err := sc.Validate(); err != nil {
			return err
		}
	}
	if cfg.Rate > 0 {
		return fmt.Errorf("--rate: the %s workload runs closed loop only", k.mode)
	}
	if k.mode == ModeOrder && cfg.Pipeline > 1 {
		return fmt.Errorf("--pipeline %d: the order workload sends one order at a time; pipelining applies to the checkout workload", cfg.Pipeline)
	}
	if k.mode == ModeOrder && k.branches != "capture" && k.branches != "empty" {
		return fmt.Errorf("--branches must be capture or empty, got %q", k.branches)
	}
	return nil
}

func (k *Kind) sweep() store.CheckoutConfig {
	return store.CheckoutConfig{SweepInterval: k.sweepInterval, SweepBatch: k.sweepBatch}
}

// Run generates the workload and runs it on st.
func (k *Kind) Run(ctx context.Context, cfg bench.KindConfig, st store.Store) (*bench.Result, error) {
	w, err := Generate(k.params(cfg))
	if err != nil {
		return nil, err
	}
	opt := Options{TTL: k.ttl, ExpiryWait: k.expiryWait, Poll: k.poll, Sweep: k.sweep(), EmptyBranches: k.branches == "empty"}
	return Run(ctx, k.mode, w, opt, cfg, st)
}
