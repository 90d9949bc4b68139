package search

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"allot/bench"
	"allot/catalog"
	"allot/server/servertest"
	"allot/store"
)

// TestAudit13ThroughputKeepsAnHour: each worker counted its queries per
// second of the run in a slice that grew for as long as the run lasted
// (1024 workers over a day: some 700 MB), and the merged counts were the
// result's series, unbounded. On a clock that moves 10 s at every read,
// a run of hours keeps bench.ThroughputSecondsMax counts, summing to its
// queries, one query at a time (embedded) and pipelined (the server over
// RESP).
func TestAudit13ThroughputKeepsAnHour(t *testing.T) {
	w := workloadOf(t, 2000, 3000)
	for _, c := range []struct {
		name     string
		pipeline int
	}{{"embedded", 1}, {"allot", 8}} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			cfg := store.Config{Durability: store.DurabilityNone, DataDir: t.TempDir(), Workers: 4}
			if c.name == "allot" {
				cfg.Durability = store.DurabilityWrite
				cfg.Addr = servertest.Start(t, servertest.Options{NoHTTP: true}).RESPAddr()
			}
			st, err := store.Open(ctx, c.name, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			if err := st.(store.Searcher).LoadCatalog(ctx, w.Records, w.Rows); err != nil {
				t.Fatal(err)
			}
			sessions := make([]store.SearchSession, 4)
			for i := range sessions {
				se, err := st.Session(ctx)
				if err != nil {
					t.Fatal(err)
				}
				defer se.Close()
				sessions[i] = se.(store.SearchSession)
			}
			var ticks atomic.Int64
			epoch := time.Unix(1_800_000_000, 0)
			clock := func() time.Time { return epoch.Add(time.Duration(ticks.Add(1)) * 10 * time.Second) }
			r := &run{w: w, sample: make([][]catalog.Result, 10), sampleDone: make([]bool, 10), now: clock}
			runCfg := bench.RunConfig{Workers: 4, Store: c.name, Pipeline: c.pipeline}
			r.timed(ctx, runCfg, sessions)
			res := &bench.Result{}
			r.fill(res, runCfg)
			if res.Seconds < 2*3600 {
				t.Fatalf("the run lasted %.0f s on the test's clock: too short to test the bound", res.Seconds)
			}
			if len(res.Throughput) > bench.ThroughputSecondsMax {
				t.Errorf("a run of %.0f s keeps %d per-second counts, want at most %d", res.Seconds, len(res.Throughput), bench.ThroughputSecondsMax)
			}
			var sum int64
			for _, n := range res.Throughput {
				sum += n
			}
			if sum != res.Ops || res.Ops != int64(len(w.Queries)) {
				t.Errorf("the per-second counts sum to %d; the run made %d queries of %d", sum, res.Ops, len(w.Queries))
			}
		})
	}
}
