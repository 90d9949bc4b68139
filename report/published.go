package report

import (
	"strings"

	"allot/bench"
)

// publishedFigure is a throughput published elsewhere for the seed workload
// (16 client threads, 1,000,000 operations, 50% captures and 50% releases,
// on one laptop), as DESIGN.md cites it. These are the only figures in the
// report that allot did not measure, and the page says so beside them.
type publishedFigure struct {
	Datastore string
	OpsPerSec float64
	// storePrefixes are the names of allot's adapters for the same
	// datastore: a measured run of one of them is shown beside the figure.
	storePrefixes []string
}

// publishedFigures returns the published figures, slowest first, as a
// function rather than a package variable so no caller can change them.
func publishedFigures() []publishedFigure {
	return []publishedFigure{
		{Datastore: "MySQL 5.7", OpsPerSec: 3400, storePrefixes: []string{"mysql", "mariadb"}},
		{Datastore: "PostgreSQL", OpsPerSec: 3800, storePrefixes: []string{"postgres"}},
		{Datastore: "Redis with Lua scripts", OpsPerSec: 14900, storePrefixes: []string{"redis"}},
		{Datastore: "Tarantool with Lua procedures", OpsPerSec: 39500, storePrefixes: []string{"tarantool"}},
	}
}

// The published workload, for deciding whether a measured run is the same.
const (
	publishedWorkload = "seed"
	publishedWorkers  = 16
	publishedOps      = 1_000_000
)

// publishedDescription is shown above the comparison.
const publishedDescription = "16 client threads, 1,000,000 operations, 50% captures and 50% releases, on one laptop"

func (p publishedFigure) matches(store string) bool {
	for _, pre := range p.storePrefixes {
		if strings.HasPrefix(store, pre) {
			return true
		}
	}
	return false
}

// sameAsPublished says whether a run replayed the published workload in the
// published way: the seed preset, 16 closed-loop workers, all 1,000,000 ops.
func sameAsPublished(r *bench.Result) bool {
	return r.Workload.Name == publishedWorkload && r.Workers == publishedWorkers &&
		r.Mode != "open" && r.Workload.Ops == publishedOps && r.Ops == publishedOps
}
