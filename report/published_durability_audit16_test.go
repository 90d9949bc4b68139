package report

import (
	"testing"

	"allot/bench"
)

// Beside a published figure goes a durable run of the datastore when there
// is one: the reports measured durable commits (MySQL and PostgreSQL as
// installed, fsync at commit), and a faster run of PostgreSQL on unlogged
// tables (none) was put beside them as the same workload.
func TestAudit16PublishedFigureBesideADurableRun(t *testing.T) {
	durable := auditRun(t, "postgres", []int64{1000, 2000, 3000})
	durable.Durability, durable.OpsPerSec = "fsync", 3000
	fast := auditRun(t, "postgres", []int64{1000, 2000, 3000})
	fast.Durability, fast.OpsPerSec = "none", 9000
	row := publishedRowOf(t, []bench.Result{fast, durable}, "PostgreSQL")
	if !row.HasMeasured || row.measuredOps != 3000 {
		t.Fatalf("PostgreSQL's published figure is beside %v ops/s, want the fsync run's 3000", row.measuredOps)
	}
}
