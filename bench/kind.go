package bench

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"allot/store"
)

// WorkloadDefault is the reservation workload of the published runs:
// captures and releases of one group at a time (package workload). It is
// run by Plan; every other workload is a Kind.
const WorkloadDefault = "ims"

// Kind is a workload other than the reservation workload "ims": checkout,
// order, rw, kv, search. A kind makes its own ops from its flags and a
// seed, drives a store through an optional capability of the store's
// sessions (found by type assertion, as store.Pipeliner is), checks the
// outcome itself and returns a Result like Plan.Run does, with its own
// figures in Result.Extra.
//
// A Kind value holds the parsed values of its own flags: the bench makes a
// fresh one (KindRegistration.New) per command line, calls RegisterFlags on
// the command's flag set before parsing, then Validate, then Run once per
// store, durability and sweep point.
type Kind interface {
	// RegisterFlags adds the kind's own flags to fs. Names must not clash
	// with the bench's common flags (see `allot bench --help`).
	RegisterFlags(fs *flag.FlagSet)
	// Validate checks the parsed flags together with the common config;
	// an error is bad input (exit 2) and names the flag.
	Validate(cfg KindConfig) error
	// Run loads what the workload needs into st, runs it as cfg says,
	// checks it and returns the result. A store that lacks the capability
	// the kind needs is an error wrapping ErrUnsupported, which the bench
	// reports as a failed run naming the store, without running it
	// differently. Other errors mean the run could not happen.
	Run(ctx context.Context, cfg KindConfig, st store.Store) (*Result, error)
}

// KindConfig is what every kind is run with: the common run config (workers,
// duration, progress, labels) and the generator's common parameters.
type KindConfig struct {
	RunConfig
	// Preset names the kind's preset ("" means the kind's default).
	Preset string
	// Ops is how many units of work to issue (carts, orders, requests);
	// 0 means the kind's default.
	Ops int
	// Seed seeds the generator.
	Seed uint64
}

// ErrUnsupported is wrapped by Kind.Run when the store cannot express the
// workload.
var ErrUnsupported = errors.New("bench: store cannot run this workload")

// KindRegistration is one entry of the kinds registry.
type KindRegistration struct {
	Name  string
	About string // one line for --help
	New   func() Kind
	// OneDurableCallPerOp says that each op the kind counts in ops/s
	// waits for one durable call before its acknowledgement, alone or
	// with the other ops in flight (kv's writes, pipelined or batched
	// --pipeline to a call, as ims's captures and releases), never for
	// two in sequence, and that a worker keeps no more than --pipeline
	// ops in flight: only then is ops/s read as a share of the run's
	// Bound, which counts one durable call per op in flight. False, the
	// default, where a call carries more ops than that (rw's
	// --transactional --batch) or an op makes several calls (a checkout
	// cart): WriteBounds prints the bound without a share, unless the
	// run declares it (Result.OneDurableCallPerOp), for a kind whose op
	// mix decides it run by run.
	OneDurableCallPerOp bool
	// DurableCalls says, where OneDurableCallPerOp is false, how the
	// kind's ops map to durable calls; WriteBounds prints it as the
	// reason there is no share.
	DurableCalls string
}

// kindOf returns the name of the kind a result came from, "" for the
// reservation workload (WorkloadDefault): kinds name their workloads
// after themselves ("checkout/hot", "rw/MODIFY", "search"), and only
// they fill Extra.
func kindOf(r *Result) string {
	if r.Extra == nil {
		return ""
	}
	name, _, _ := strings.Cut(r.Workload.Name, "/")
	return name
}

var (
	kindsMu sync.Mutex
	kinds   = map[string]KindRegistration{}
)

// RegisterKind adds a workload kind. It panics on a duplicate or reserved
// name: that is a programming error.
func RegisterKind(r KindRegistration) {
	kindsMu.Lock()
	defer kindsMu.Unlock()
	if _, dup := kinds[r.Name]; dup || r.Name == WorkloadDefault {
		panic("bench: workload " + r.Name + " registered twice")
	}
	kinds[r.Name] = r
}

// LookupKind returns the registration of a workload kind.
func LookupKind(name string) (KindRegistration, error) {
	kindsMu.Lock()
	defer kindsMu.Unlock()
	r, ok := kinds[name]
	if !ok {
		names := []string{WorkloadDefault}
		for n := range kinds {
			names = append(names, n)
		}
		sort.Strings(names[1:])
		return KindRegistration{}, fmt.Errorf("bench: unknown workload %q (known: %v)", name, names)
	}
	return r, nil
}

// Kinds returns every registered kind, sorted by name.
func Kinds() []KindRegistration {
	kindsMu.Lock()
	defer kindsMu.Unlock()
	out := make([]KindRegistration, 0, len(kinds))
	for _, r := range kinds {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b KindRegistration) int { return strings.Compare(a.Name, b.Name) })
	return out
}
