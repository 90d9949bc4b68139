// Package rwtest runs workload rw end to end from adapters' tests: the
// flags as a command line would give them, the run, its result.
package rwtest

import (
	"context"
	"flag"
	"testing"

	"allot/bench"
	_ "allot/bench/rw" // registers the kind
	"allot/store"
)

// Run runs workload rw on st with the given flags, workers sessions and
// ops units of work, in durability d (the mode st was opened in), and
// returns the result. A run that cannot happen fails the test.
func Run(t testing.TB, st store.Store, d store.Durability, workers, ops int, args ...string) *bench.Result {
	t.Helper()
	reg, err := bench.LookupKind("rw")
	if err != nil {
		t.Fatal(err)
	}
	k := reg.New()
	fs := flag.NewFlagSet("rw", flag.ContinueOnError)
	k.RegisterFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	cfg := bench.KindConfig{RunConfig: bench.RunConfig{Workers: workers, Store: "test", Durability: d}, Ops: ops, Seed: 1}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := k.Validate(cfg); err != nil {
		t.Fatal(err)
	}
	res, err := k.Run(context.Background(), cfg, st)
	if err != nil {
		t.Fatalf("rw %v: %v", args, err)
	}
	return res
}

// LostUpdates runs MODIFY and MODIFY_LOCKED on few records with many
// workers and checks what the checker says: MODIFY_LOCKED must lose
// nothing and pass; MODIFY's lost updates are returned (counted, not a
// violation) for the caller to report or expect.
func LostUpdates(t testing.TB, st store.Store, d store.Durability, extra ...string) (lost int64) {
	t.Helper()
	res := Run(t, st, d, 8, 2000, append([]string{"--request-type", "MODIFY_LOCKED", "--records", "4"}, extra...)...)
	if !res.Check.OK || res.Errors != 0 {
		t.Fatalf("MODIFY_LOCKED: check %+v, errors %d %v", res.Check, res.Errors, res.ErrorSamples)
	}
	if n := res.Extra["lost_updates"].(int64); n != 0 {
		t.Fatalf("MODIFY_LOCKED lost %d updates", n)
	}
	res = Run(t, st, d, 8, 2000, append([]string{"--request-type", "MODIFY", "--records", "4"}, extra...)...)
	if !res.Check.OK || res.Errors != 0 {
		t.Fatalf("MODIFY: check %+v, errors %d %v", res.Check, res.Errors, res.ErrorSamples)
	}
	return res.Extra["lost_updates"].(int64)
}
