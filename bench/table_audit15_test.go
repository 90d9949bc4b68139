package bench

import (
	"bytes"
	"strings"
	"testing"
)

// A checkout run's ops are carts (an order run's, orders; a search run's,
// queries): the kind says so in Extra ("carts_per_sec", equal to
// ops_per_sec), but the table printed them under "ops" and "ops/s" with
// nothing saying what was counted, beside README's "ops/s counts the
// workload's ops (captures and releases)".
func TestAudit15TableSaysWhatAKindsOpsAre(t *testing.T) {
	run := func(store, name string, extra map[string]any) Result {
		return Result{Store: store, Workload: WorkloadInfo{Name: name}, Durability: "fsync", Workers: 16, Pipeline: 1,
			Status: StatusOK, Ops: 3000, Seconds: 0.25, OpsPerSec: 12000, Check: CheckResult{OK: true}, Extra: extra}
	}
	var out bytes.Buffer
	runs := []Result{
		run("redis", "checkout/hot", map[string]any{"carts_per_sec": 12000.0, "insufficient": int64(0)}),
		run("postgres", "search", map[string]any{"queries_per_sec": 12000.0}),
	}
	if err := WriteTable(&out, runs); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"redis, checkout/hot, fsync, 16 workers: ops are carts (extra.carts_per_sec)",
		"postgres, search, fsync, 16 workers: ops are queries (extra.queries_per_sec)",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the table does not say %q:\n%s", want, out.String())
		}
	}

	out.Reset()
	if err := WriteTable(&out, []Result{run("allot", "seed", nil)}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "ops are") {
		t.Errorf("a reservation run's ops explained as another unit:\n%s", out.String())
	}
}
