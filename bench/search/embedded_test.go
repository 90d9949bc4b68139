package search

import (
	"context"
	"testing"

	"allot/bench"
	"allot/store"
	_ "allot/store/embedded"
)

// The engine answers the workload exactly as the reference does, in every
// durability mode.
func TestEmbeddedEngine(t *testing.T) {
	w := workloadOf(t, 20000, 3000)
	for _, dur := range []store.Durability{store.DurabilityNone, store.DurabilityFsync} {
		st, err := store.Open(context.Background(), "embedded", store.Config{Durability: dur, DataDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		res, err := Run(context.Background(), w, Options{}, bench.RunConfig{Workers: 4, Store: "embedded", Durability: dur}, st)
		if err != nil {
			t.Fatal(err)
		}
		if !res.Check.OK || res.Errors != 0 {
			t.Fatalf("%s: check %+v, errors %v", dur, res.Check, res.ErrorSamples)
		}
		t.Logf("%s: %.0f queries/s, p99 %.3f ms, load %.2f s", dur, res.OpsPerSec, res.LatencyMS.P99, res.Extra["load_seconds"])
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
