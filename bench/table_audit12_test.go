package bench

import (
	"bytes"
	"strings"
	"testing"
)

// The table had no pipeline column: a run at depth 64 sat beside one at
// depth 1 with nothing in its row to tell them apart. With any run deeper
// than 1 the table has a "pipeline" column; without, it has none.
func TestAudit12TableShowsPipelineWhenAnyRunIsDeeper(t *testing.T) {
	run := func(depth int) Result {
		return Result{Store: "allot", Workload: WorkloadInfo{Name: "seed"}, Durability: "fsync", Workers: 16, Pipeline: depth,
			Status: StatusOK, Ops: 1000, Seconds: 1, OpsPerSec: 1000, Check: CheckResult{OK: true}}
	}
	var out bytes.Buffer
	if err := WriteTable(&out, []Result{run(1), run(64)}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out.String(), "\n")
	head := strings.Fields(lines[0])
	col := -1
	for i, h := range head {
		if h == "pipeline" {
			col = i
		}
	}
	if col < 0 {
		t.Fatalf("no pipeline column with a run at depth 64:\n%s", out.String())
	}
	if f := strings.Fields(lines[1]); len(f) <= col || f[col] != "1" {
		t.Errorf("first run's pipeline cell: %q, want 1", f)
	}
	if f := strings.Fields(lines[2]); len(f) <= col || f[col] != "64" {
		t.Errorf("second run's pipeline cell: %q, want 64", f)
	}
	out.Reset()
	if err := WriteTable(&out, []Result{run(1), run(0)}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(strings.SplitN(out.String(), "\n", 2)[0], "pipeline") {
		t.Errorf("a pipeline column with every run at depth 1:\n%s", out.String())
	}
}

// Figures a kind keeps in Extra were never printed: an rw MODIFY run that
// lost 11,192 of 20,000 updates printed "check: OK" and nothing else. Each
// non-zero count of lost, missing or unknown, the share of carts refused
// and the expiry lag get a note under the run's check line, naming the
// field. In memory they are int64; read back from JSON, float64.
func TestAudit12ExtraFiguresAreNoted(t *testing.T) {
	for _, tc := range []struct {
		name  string
		r     Result
		want  []string
		never []string
	}{
		{"rw lost updates", Result{Workload: WorkloadInfo{Name: "rw/MODIFY"}, Ops: 20000, Extra: map[string]any{
			"lost_updates": int64(11192), "updates_acknowledged": int64(20000), "records_with_lost_updates": int64(100)}},
			[]string{"11192 of 20000 acknowledged updates lost, on 100 records (extra.lost_updates)"}, nil},
		{"rw no lost updates", Result{Workload: WorkloadInfo{Name: "rw/MODIFY_LOCKED"}, Ops: 20000, Extra: map[string]any{
			"lost_updates": int64(0), "updates_acknowledged": int64(20000)}},
			nil, []string{"note:"}},
		{"queue unconfirmed", Result{Workload: WorkloadInfo{Name: "rw/WRITE"}, Ops: 5000, Extra: map[string]any{
			"published": float64(5000), "unconfirmed_missing": float64(12)}},
			[]string{"12 of 5000 published messages missing", "(extra.unconfirmed_missing)"}, nil},
		{"inserts missing", Result{Workload: WorkloadInfo{Name: "rw/WRITE"}, Ops: 5000, Extra: map[string]any{
			"inserts_acknowledged": int64(5000), "inserts_missing": int64(3)}},
			[]string{"3 of 5000 acknowledged inserts missing (extra.inserts_missing)"}, nil},
		{"checkout", Result{Workload: WorkloadInfo{Name: "checkout/hot"}, Ops: 3000, Extra: map[string]any{
			"insufficient": float64(300), "unknown_outcome": float64(5), "units_missing": float64(7),
			"expiry_lag_samples": float64(256), "expiry_lag_p50_ms": 1.25, "expiry_lag_p99_ms": 4.5, "expiry_lag_max_ms": 9.75}},
			[]string{"300 of 3000 carts refused as insufficient (10.0%) (extra.insufficient)",
				"5 of 3000 carts of unknown outcome", "(extra.unknown_outcome)",
				"7 units taken and not accounted for (extra.units_missing)",
				"expiry lag p50 1.250 ms, p99 4.500 ms, max 9.750 ms over 256 abandoned holds timed (extra.expiry_lag_*)"}, nil},
		{"order", Result{Workload: WorkloadInfo{Name: "order/hot"}, Ops: 3000, Extra: map[string]any{
			"insufficient": int64(30), "unknown_outcome": int64(0)}},
			[]string{"30 of 3000 orders refused as insufficient (1.0%)"}, []string{"unknown outcome"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.r
			r.Store, r.Durability, r.Workers, r.Status, r.Check = "postgres", "fsync", 4, StatusOK, CheckResult{OK: true}
			var out bytes.Buffer
			if err := WriteTable(&out, []Result{r}); err != nil {
				t.Fatal(err)
			}
			s := out.String()
			for _, w := range tc.want {
				if !strings.Contains(s, "note: ") || !strings.Contains(s, w) {
					t.Errorf("table:\n%s\nwant a note with %q", s, w)
				}
			}
			for _, n := range tc.never {
				if strings.Contains(s, n) {
					t.Errorf("table:\n%s\nwant no %q", s, n)
				}
			}
		})
	}
}
