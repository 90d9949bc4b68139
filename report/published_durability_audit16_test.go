package report

import (
	"testing"

	"allot/bench"
)

// Beside a published figure goes a run in the datastore's mode as
// installed, which the reports do not say they changed, before a faster
// one in another mode: PostgreSQL on unlogged tables (none) went beside
// the reports' durable commits as the same workload. Tarantool's wal_mode
// is write as installed, so its write run goes first.
func TestAudit16PublishedFigureBesideTheInstalledMode(t *testing.T) {
	run := func(store, durability string, ops float64) bench.Result {
		r := auditRun(t, store, []int64{1000, 2000, 3000})
		r.Durability, r.OpsPerSec = durability, ops
		return r
	}
	runs := []bench.Result{
		run("postgres", "none", 9000), run("postgres", "fsync", 3000),
		run("tarantool", "fsync", 30000), run("tarantool", "write", 20000),
	}
	for _, c := range []struct {
		datastore string
		want      float64
	}{{"PostgreSQL", 3000}, {"Tarantool with Lua procedures", 20000}} {
		if row := publishedRowOf(t, runs, c.datastore); !row.HasMeasured || row.measuredOps != c.want {
			t.Errorf("%s's published figure is beside %v ops/s, want %v", c.datastore, row.measuredOps, c.want)
		}
	}
}
