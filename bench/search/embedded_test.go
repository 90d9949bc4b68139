package search

import (
	"context"
	"errors"
	"strings"
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
		name     string
		dur      store.Durability
		pipeline int
	}{{"embedded", store.DurabilityNone, 1}, {"embedded", store.DurabilityFsync, 1}, {"allot", store.DurabilityWrite, 1},
		{"allot", store.DurabilityWrite, 16}, {"allot-mux", store.DurabilityWrite, 1}} {
		dur := c.dur
		cfg := store.Config{Durability: dur, DataDir: t.TempDir(), Workers: 4}
		if c.name == "allot" || c.name == "allot-mux" {
			// The server in-process (servertest), reached over RESP.
			cfg.Addr = servertest.Start(t, servertest.Options{NoHTTP: true}).RESPAddr()
		}
		st, err := store.Open(context.Background(), c.name, cfg)
		if err != nil {
			t.Fatal(err)
		}
		res, err := Run(context.Background(), w, Options{}, bench.RunConfig{Workers: 4, Store: c.name, Durability: dur, Pipeline: c.pipeline}, st)
		if err != nil {
			t.Fatal(err)
		}
		if !res.Check.OK || res.Errors != 0 {
			t.Fatalf("%s: check %+v, errors %v", dur, res.Check, res.ErrorSamples)
		}
		if res.Pipeline != c.pipeline || res.Ops != int64(len(w.Queries)) {
			t.Fatalf("pipeline %d, ops %d: want %d and %d", res.Pipeline, res.Ops, c.pipeline, len(w.Queries))
		}
		t.Logf("%s %s pipeline %d: %.0f queries/s, p99 %.3f ms, load %.2f s", c.name, dur, c.pipeline, res.OpsPerSec, res.LatencyMS.P99, res.Extra["load_seconds"])
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// A store that cannot keep searches in flight is refused --pipeline, not
// run one query at a time under that label.
func TestPipelineNeedsAPipeliningStore(t *testing.T) {
	w := workloadOf(t, 2000, 100)
	st, err := store.Open(context.Background(), "embedded", store.Config{Durability: store.DurabilityNone, DataDir: t.TempDir(), Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	_, err = Run(context.Background(), w, Options{}, bench.RunConfig{Workers: 1, Store: "embedded", Pipeline: 4}, st)
	if !errors.Is(err, bench.ErrUnsupported) || !strings.Contains(err.Error(), "--pipeline 4") {
		t.Fatalf("want ErrUnsupported naming --pipeline 4, got %v", err)
	}
}
