package naive_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"allot/bench"
	"allot/inventory"
	"allot/services"
	"allot/services/servicestest"
	"allot/store"
	"allot/store/naive"
	"allot/store/postgres"
	"allot/workload"
)

// TestOneSessionIsCorrect: alone, the naive store follows the domain's
// rules; only concurrency breaks it.
func TestOneSessionIsCorrect(t *testing.T) {
	servicestest.Require(t, services.Postgres)
	ctx := context.Background()
	st, err := naive.Open(ctx, store.Config{Durability: store.DurabilityWrite}, "test_naive_alone")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	g := inventory.GroupKey{SKU: "s", Condition: "new", Source: "supplier"}
	if err := st.Load(ctx, []inventory.Row{{Key: g.Row("b"), Count: 2}, {Key: g.Row("a"), Count: 1}, {Key: g.Row("c"), Count: 5}}); err != nil {
		t.Fatal(err)
	}
	se, err := st.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer se.Close()
	res, err := se.Capture(ctx, g, 4, nil)
	if want := []inventory.Line{{Warehouse: "a", Count: 1}, {Warehouse: "b", Count: 2}, {Warehouse: "c", Count: 1}}; err != nil || res.Code != inventory.CodeOK || !slices.Equal(res.Lines, want) {
		t.Fatalf("capture 4: %+v %v, want %v", res, err, want)
	}
	if res, err := se.Capture(ctx, g, 5, nil); err != nil || res.Code != inventory.CodeInsufficient || res.Available != 4 {
		t.Fatalf("capture 5 of 4: %+v %v", res, err)
	}
	if res, err := se.Release(ctx, g.Row("a"), 3); err != nil || res.Code != inventory.CodeOK || res.Count != 3 {
		t.Fatalf("release 3: %+v %v", res, err)
	}
	if res, err := se.Release(ctx, g.Row("z"), 3); err != nil || res.Code != inventory.CodeNotFound {
		t.Fatalf("release to an unknown row: %+v %v", res, err)
	}
	if res, err := se.Capture(ctx, g, 0, nil); err != nil || res.Code != inventory.CodeInvalid {
		t.Fatalf("capture 0: %+v %v", res, err)
	}
	rows, err := st.Rows(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, r := range rows {
		total += r.Count
	}
	if total != 7 {
		t.Fatalf("rows after 4 captured and 3 released from 8: total %d, want 7 (%v)", total, rows)
	}
}

// hotRun replays a short hot-preset workload (every capture fights over
// 20 rows) with 16 workers through the bench runner.
func hotRun(t *testing.T, name string, st store.Store) *bench.Result {
	t.Helper()
	p, err := workload.Preset("hot")
	if err != nil {
		t.Fatal(err)
	}
	p.Ops = 20_000
	w, err := workload.Generate(p)
	if err != nil {
		t.Fatal(err)
	}
	cfg := bench.RunConfig{
		Workers: 16, Store: name, Durability: store.DurabilityWrite,
		// Lost releases make some captures hopeless: give up on them soon.
		RetryDelay: time.Millisecond, RetryMax: 20,
	}
	res, err := bench.Run(context.Background(), cfg, st, w)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	t.Logf("%s: %.0f ops/s, %d stock retries, %d errors, check ok=%v, %d violations",
		name, res.OpsPerSec, res.Retries, res.Errors, res.Check.OK, res.Check.ViolationCount)
	return res
}

// TestCheckerCatchesTheNaiveOversell: the same hot run passes the checker
// on the postgres adapter and fails it on the naive one.
func TestCheckerCatchesTheNaiveOversell(t *testing.T) {
	servicestest.Require(t, services.Postgres)
	ctx := context.Background()
	cfg := store.Config{Durability: store.DurabilityWrite, Workers: 16}

	pg, err := postgres.Open(ctx, cfg, postgres.Options{Schema: "test_naive_control"})
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	if res := hotRun(t, "postgres", pg); !res.Check.OK || res.Errors != 0 {
		t.Fatalf("postgres failed the check: %d errors %v, violations %v", res.Errors, res.ErrorSamples, res.Check.Violations)
	}

	nv, err := naive.Open(ctx, cfg, "test_naive")
	if err != nil {
		t.Fatal(err)
	}
	defer nv.Close()
	res := hotRun(t, "naive-postgres", nv)
	if res.Check.OK || res.Check.ViolationCount == 0 || len(res.Check.Violations) == 0 {
		t.Fatalf("the checker found nothing wrong with the naive store: %+v", res.Check)
	}
	t.Logf("first violations: %v", res.Check.Violations[:min(3, len(res.Check.Violations))])
}
