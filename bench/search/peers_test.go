package search

import (
	"context"
	"strings"
	"testing"

	"allot/bench"
	"allot/services/servicestest"
	"allot/store"
	_ "allot/store/mysql"
	_ "allot/store/postgres"
	_ "allot/store/redis"
	_ "allot/store/tarantool"
)

// Every peer answers the workload exactly as the reference does: the same
// folding, the same order, the same available units. Each runs against
// the project's own server (CI=true makes a missing server a failure).
func TestPeers(t *testing.T) {
	w := workloadOf(t, 20000, 2000)
	// The published procedure scans: a smaller catalog keeps it quick.
	small := workloadOf(t, 4000, 1000)
	for _, c := range []struct {
		store, server, procedure string
		pipeline                 int
	}{
		{"redis", "redis", "", 1},
		// Redis pipelines its searches (EVALSHA in one round trip).
		{"redis", "redis", "", 8},
		{"postgres", "postgres", "", 1},
		{"mysql", "mariadb", "", 1},
		// MyISAM keys hold at most 1,000 bytes: the catalog's index is a
		// prefix there (its table could not be created before).
		{"mysql-myisam", "mariadb", "", 1},
		// The report names which Tarantool procedure a run measured.
		{"tarantool", "tarantool", "search: the corrected procedure", 1},
		{"naive-tarantool-search", "tarantool", "search: the published procedure as written", 1},
	} {
		name := c.store
		if c.pipeline > 1 {
			name += "-pipelined"
		}
		t.Run(name, func(t *testing.T) {
			servicestest.RequireDurability(t, c.server, store.DurabilityFsync)
			ctx := context.Background()
			st, err := store.Open(ctx, c.store, store.Config{Durability: store.DurabilityFsync, Workers: 4})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			w := w
			if c.store == "naive-tarantool-search" {
				w = small
			}
			res, err := Run(ctx, w, Options{}, bench.RunConfig{Workers: 4, Store: c.store, Pipeline: c.pipeline}, st)
			if err != nil {
				t.Fatal(err)
			}
			if !res.Check.OK || res.Errors != 0 {
				t.Fatalf("check %d violations %v, errors %v", res.Check.ViolationCount, res.Check.Violations, res.ErrorSamples)
			}
			if !strings.Contains(res.Description, c.procedure) {
				t.Errorf("the run's description %q does not name %q", res.Description, c.procedure)
			}
			t.Logf("%.0f queries/s, p99 %.3f ms, load %.2f s", res.OpsPerSec, res.LatencyMS.P99, res.Extra["load_seconds"])
		})
	}
}
