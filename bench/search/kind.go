package search

import (
	"context"
	"flag"
	"fmt"

	"allot/bench"
	"allot/store"
)

func init() {
	bench.RegisterKind(bench.KindRegistration{
		Name:  "search",
		About: "case-insensitive title-prefix search over a 1M-record catalog (store.Searcher); every store's answers checked against the reference",
		New:   func() bench.Kind { return &Kind{} },
	})
}

// Kind is the bench.Kind of the search workload.
type Kind struct {
	records     int
	brandShare  float64
	checkSample int
}

// CheckSample returns --check-sample: the queries whose answers are
// compared with the reference.
func (k *Kind) CheckSample() int { return k.checkSample }

// CheckSampleDefault is how many queries every run compares.
const CheckSampleDefault = 1000

// RegisterFlags adds the kind's flags.
func (k *Kind) RegisterFlags(fs *flag.FlagSet) {
	fs.IntVar(&k.records, "records", RecordsDefault, "catalog records")
	fs.Float64Var(&k.brandShare, "brand-share", BrandShareDefault, "share of queries that also carry a BRAND prefix")
	fs.IntVar(&k.checkSample, "check-sample", CheckSampleDefault, "queries whose answers are compared with the reference (spread evenly over the run; at least 1000)")
}

func (k *Kind) params(cfg bench.KindConfig) Params {
	p := Params{Records: k.records, Queries: cfg.Ops, Seed: cfg.Seed, BrandShare: k.brandShare}
	if p.Queries == 0 {
		p.Queries = QueriesDefault
	}
	return p
}

// StoreUse implements bench.StoreUser: the timed part only searches.
func (k *Kind) StoreUse(u *store.Use) { u.ReadOnly = true }

// Validate checks the flags.
func (k *Kind) Validate(cfg bench.KindConfig) error {
	p := k.params(cfg)
	if err := p.Validate(); err != nil {
		return err
	}
	if k.checkSample < CheckSampleDefault {
		return fmt.Errorf("--check-sample must be at least %d, got %d", CheckSampleDefault, k.checkSample)
	}
	if cfg.Rate > 0 {
		return fmt.Errorf("--rate: the search workload runs closed loop only")
	}
	if cfg.Preset != "" {
		return fmt.Errorf("--preset: the search workload has no presets (use --records, --ops)")
	}
	return nil
}

// Run generates the workload and runs it on st.
func (k *Kind) Run(ctx context.Context, cfg bench.KindConfig, st store.Store) (*bench.Result, error) {
	w, err := Generate(k.params(cfg))
	if err != nil {
		return nil, err
	}
	return Run(ctx, w, Options{CheckSample: k.checkSample}, cfg.RunConfig, st)
}
