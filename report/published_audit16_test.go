package report

import (
	"regexp"
	"strings"
	"testing"

	"allot/bench"
)

// A store has one colour in the table, the charts and the published bars
// (storeColors over all runs). The published view numbered the colours
// over the reservation runs alone: with a checkout run of redis first, the
// table and charts drew redis in c0 and postgres in c1, and the published
// bar of PostgreSQL came out c0, redis's colour everywhere else.
func TestAudit16PublishedBarsHaveTheStoresColours(t *testing.T) {
	cart := auditRun(t, "redis", []int64{1000, 2000, 3000})
	cart.Workload = bench.WorkloadInfo{Name: "checkout/hot", Rows: 20, Ops: 3}
	cart.Extra = map[string]any{"carts_per_sec": cart.OpsPerSec}
	pg := auditRun(t, "postgres", []int64{1000, 2000, 3000})
	rd := auditRun(t, "redis", []int64{1000, 2000, 3000})
	runs := []bench.Result{cart, pg, rd}
	colors := storeColors(runs)
	f := &bench.ResultsFile{Version: bench.ResultsVersion, Runs: runs}
	page := render(t, f)
	for _, tt := range []struct{ datastore, store string }{{"PostgreSQL", "postgres"}, {"Redis with Lua scripts", "redis"}} {
		if row := publishedRowOf(t, runs, tt.datastore); !row.HasMeasured || row.Color != colors[tt.store] {
			t.Errorf("%s: published row colour %d, the table's colour of %s is %d", tt.datastore, row.Color, tt.store, colors[tt.store])
		}
		// And on the page: the measured bar's class is the swatch's in the table.
		re := regexp.MustCompile(`<tr><td>` + regexp.QuoteMeta(tt.datastore) + `</td>.*?<div class="bar (c\d+)" style`)
		m := re.FindStringSubmatch(page)
		if m == nil {
			t.Fatalf("no measured bar for %s", tt.datastore)
		}
		swatch := regexp.MustCompile(`<span class="swatch (c\d+)"></span>` + regexp.QuoteMeta(tt.store) + `</td>`).FindStringSubmatch(page)
		if swatch == nil || !strings.EqualFold(swatch[1], m[1]) {
			t.Errorf("%s: bar %s, table swatch %v", tt.datastore, m[1], swatch)
		}
	}
}
