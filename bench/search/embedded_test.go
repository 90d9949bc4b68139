package search

import (
	"context"
	"testing"

	"allot/bench"
	"allot/server/servertest"
	"allot/store"
	_ "allot/store/embedded"
	_ "allot/store/remote"
)

// The engine answers the workload exactly as the reference does, in
// process in two durability modes and over RESP.
func TestEmbeddedEngine(t *testing.T) {
	w := workloadOf(t, 20000, 3000)
	for _, c := range []struct {
		name string
		dur  store.Durability
	}{{"embedded", store.DurabilityNone}, {"embedded", store.DurabilityFsync}, {"allot", store.DurabilityWrite}} {
		dur := c.dur
		cfg := store.Config{Durability: dur, DataDir: t.TempDir(), Workers: 4}
		if c.name == "allot" {
			// The server in-process (servertest), reached over RESP.
			cfg.Addr = servertest.Start(t, servertest.Options{NoHTTP: true}).RESPAddr()
		}
		st, err := store.Open(context.Background(), c.name, cfg)
		if err != nil {
			t.Fatal(err)
		}
		res, err := Run(context.Background(), w, Options{}, bench.RunConfig{Workers: 4, Store: c.name, Durability: dur}, st)
		if err != nil {
			t.Fatal(err)
		}
		if !res.Check.OK || res.Errors != 0 {
			t.Fatalf("%s: check %+v, errors %v", dur, res.Check, res.ErrorSamples)
		}
		t.Logf("%s %s: %.0f queries/s, p99 %.3f ms, load %.2f s", c.name, dur, res.OpsPerSec, res.LatencyMS.P99, res.Extra["load_seconds"])
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
