package report

import (
	"context"
	"flag"
	"regexp"
	"strings"
	"testing"

	"allot/bench"
	_ "allot/bench/search" // registers the search kind (TestAudit15OpFileNamedLikeAKindIsAReservationRun)
	"allot/store"
)

// publishedRowOf returns the published comparison's row of a datastore.
func publishedRowOf(t *testing.T, runs []bench.Result, datastore string) publishedRow {
	t.Helper()
	v := newPublishedView(runs, runLabels(runs, ""))
	for _, r := range v.Rows {
		if r.Datastore == datastore {
			return r
		}
	}
	t.Fatalf("no published row %q", datastore)
	return publishedRow{}
}

// `allot bench --preset seed --rows 20 --ops 1000000` (or --skus 5, or an
// op file whose header says name=seed) keeps the workload's name "seed":
// the published comparison marked such a run "same workload" though it
// fought over 20 rows, not the published 1,000 over 1,000 SKUs.
func TestAudit15RowsOrSKUsOverrideIsNotThePublishedWorkload(t *testing.T) {
	base := bench.Result{Store: "redis", Status: bench.StatusOK, Workers: 16, Pipeline: 1, Mode: "closed", Durability: "fsync",
		Ops: 1_000_000, OpsPerSec: 20_000, Check: bench.CheckResult{OK: true, Violations: []string{}},
		Workload: bench.WorkloadInfo{Name: "seed", Rows: 1000, SKUs: 1000, Ops: 1_000_000, Seed: 1}}
	if !sameAsPublished(&base) {
		t.Fatal("the seed preset itself is not the published workload")
	}
	rows := base
	rows.Workload.Rows = 20
	skus := base
	skus.Workload.SKUs = 5
	for name, r := range map[string]bench.Result{"--rows 20": rows, "--skus 5": skus} {
		if sameAsPublished(&r) {
			t.Errorf("%s: a seed-named run over %d rows of %d SKUs is called the published workload", name, r.Workload.Rows, r.Workload.SKUs)
		}
		if row := publishedRowOf(t, []bench.Result{r}, "Redis with Lua scripts"); row.Same {
			t.Errorf("%s: Redis row marked same workload: %+v", name, row)
		}
	}
}

// A kind registered only to give a failed run a kind's name, as the bench
// labels a checkout run that never ran ("checkout/hot").
func init() {
	bench.RegisterKind(bench.KindRegistration{Name: "audit15kind", About: "test only", New: func() bench.Kind { return audit15Kind{} }})
}

type audit15Kind struct{}

func (audit15Kind) RegisterFlags(*flag.FlagSet)     {}
func (audit15Kind) Validate(bench.KindConfig) error { return nil }
func (audit15Kind) Run(context.Context, bench.KindConfig, store.Store) (*bench.Result, error) {
	return nil, nil
}

// The published figures are of the reservation workload (captures and
// releases). A checkout run's carts/s (or a search run's queries/s) was put
// beside them, on the same bars, as "measured here, ops/s" of the same
// datastore, merely marked "different parameters".
func TestAudit15OtherWorkloadsAreNotBesidePublishedFigures(t *testing.T) {
	cart := auditRun(t, "redis", []int64{1000, 2000, 3000})
	cart.Workload = bench.WorkloadInfo{Name: "checkout/hot", Rows: 20, Ops: 3}
	cart.Workers = 16
	cart.Extra = map[string]any{"carts_per_sec": cart.OpsPerSec, "insufficient": 0}
	if row := publishedRowOf(t, []bench.Result{cart}, "Redis with Lua scripts"); row.HasMeasured || row.Unpassed {
		t.Errorf("a checkout run is measured beside the published reservation figure: %+v", row)
	}
	neverRan := bench.Result{Store: "tarantool", Workload: bench.WorkloadInfo{Name: "audit15kind/hot"}, Workers: 16,
		Status: bench.StatusFailed, Error: "bench: store tarantool cannot run it", Check: bench.CheckResult{Violations: []string{}}}
	if row := publishedRowOf(t, []bench.Result{cart, neverRan}, "Tarantool with Lua procedures"); row.HasMeasured || row.Unpassed {
		t.Errorf("a failed run of another workload reads as the reservation workload not passing: %+v", row)
	}
	ims := auditRun(t, "allot", []int64{1000, 2000})
	runs := []bench.Result{ims, cart}
	v := newPublishedView(runs, runLabels(runs, ""))
	for _, r := range v.Rows {
		if r.Datastore == "redis" {
			t.Errorf("the checkout run has a row of its own in the published comparison: %+v", r)
		}
	}
	page := render(t, &bench.ResultsFile{Version: bench.ResultsVersion, Runs: runs})
	section := regexp.MustCompile(`(?s)<section id="published">.*?</section>`).FindString(page)
	if !strings.Contains(text(section), "checkout/hot") {
		t.Errorf("the published section does not say that the checkout run is left out:\n%s", text(section))
	}
}

// A run that failed its check, or some of whose ops failed, was drawn in
// the throughput and latency charts under its plain label, like a valid
// one (the sweep curves leave such runs out; these charts keep them, and
// must say so).
func TestAudit15FailedRunsAreMarkedInCharts(t *testing.T) {
	good := auditRun(t, "postgres", []int64{1000, 2000, 3000})
	oversold := auditRun(t, "naive-postgres", []int64{1000, 2000, 3000})
	oversold.Status = bench.StatusCheckFailed
	oversold.Check = bench.CheckResult{OK: false, Violations: []string{"group x: oversold by 3"}, ViolationCount: 1}
	errs := auditRun(t, "redis", []int64{1000, 2000, 3000})
	errs.Errors = 4
	f := &bench.ResultsFile{Version: bench.ResultsVersion, Runs: []bench.Result{good, oversold, errs}}
	cs := newChartSet(f, storeColors(f.Runs))
	for _, c := range append(cs.Throughput, cs.Spectrum...) {
		for _, s := range c.Series {
			failed := strings.HasPrefix(s.Label, "naive-postgres") || strings.HasPrefix(s.Label, "redis")
			if failed != strings.Contains(s.Label, "failed") {
				t.Errorf("%s: series %q: failed run %v, but the label says otherwise", c.ID, s.Label, failed)
			}
		}
	}
}

// A checkout run's ops are carts and each latency sample is a whole cart
// (its hold, then its confirm or cancel, with re-sends), but the latency
// captions said every closed-loop sample was "the time of each store
// call", and nothing on the page said that its Ops/s counts carts.
func TestAudit15OtherWorkloadsUnitsAreSaid(t *testing.T) {
	cart := auditRun(t, "redis", []int64{1000, 2000, 3000})
	cart.Workload = bench.WorkloadInfo{Name: "checkout/hot", Rows: 20, Ops: 3}
	cart.Extra = map[string]any{"carts_per_sec": cart.OpsPerSec}
	cart.Sweep = &bench.SweepPoint{Param: "workers", Value: 4, Label: "workers=4"}
	f := &bench.ResultsFile{Version: bench.ResultsVersion, Runs: []bench.Result{cart}}
	cs := newChartSet(f, storeColors(f.Runs))
	for _, c := range append(cs.Spectrum, cs.Sweeps...) {
		if strings.Contains(c.Caption, "store call") && !strings.Contains(c.Caption, "cart") {
			t.Errorf("%s: caption %q calls a checkout run's latency the time of a store call", c.ID, c.Caption)
		}
	}
	page := render(t, f)
	summary := text(regexp.MustCompile(`(?s)<section id="summary">.*?</section>`).FindString(page))
	if !strings.Contains(summary, "cart") {
		t.Errorf("the comparison does not say that a checkout run's ops are carts:\n%s", summary)
	}
	checks := text(regexp.MustCompile(`(?s)<section id="checks">.*?</section>`).FindString(page))
	if strings.HasPrefix(strings.TrimPrefix(checks, "Checks "), "After each run the checker compares every group") {
		t.Errorf("the checks section describes the reservation workload's checker for a checkout run:\n%s", checks)
	}

	// A page of reservation runs only keeps its captions as they were.
	ims := &bench.ResultsFile{Version: bench.ResultsVersion, Runs: []bench.Result{auditRun(t, "allot", []int64{1000, 2000})}}
	if page := render(t, ims); strings.Contains(page, "other workloads") {
		t.Error("a page of reservation runs only talks of other workloads")
	}
}

// An op file may name its workload after a kind ("search"): a run that
// replayed one is still the reservation workload (kinds take no op file),
// and stays beside the published figures.
func TestAudit15OpFileNamedLikeAKindIsAReservationRun(t *testing.T) {
	r := bench.Result{Store: "redis", Workload: bench.WorkloadInfo{Name: "search", File: "drop.ops"}}
	if !reservationRun(&r) {
		t.Fatal("a run of an op file named search was taken for the search workload")
	}
}
