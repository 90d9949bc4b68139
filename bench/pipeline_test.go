package bench

import (
	"context"
	"strings"
	"testing"
	"time"

	"allot/store"
	"allot/store/embedded"
	"allot/store/memory"
)

// TestRunPipelined runs the hot preset (captures overtake the releases
// they need, so retries happen inside pipelines) with 8 ops in flight per
// worker on the embedded engine, and checks it.
func TestRunPipelined(t *testing.T) {
	ctx := context.Background()
	w := genWorkload(t, "hot", 20_000)
	st, err := embedded.Open(ctx, store.Config{Durability: store.DurabilityWrite, Pipeline: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	res, err := Run(ctx, RunConfig{Workers: 4, Pipeline: 8, Store: "embedded", RetryDelay: 100 * time.Microsecond}, st, w)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != StatusOK || !res.Check.OK || res.Ops != int64(len(w.Ops)) || res.Errors != 0 {
		t.Fatalf("status %s ops %d errors %d check %+v", res.Status, res.Ops, res.Errors, res.Check)
	}
	if res.Pipeline != 8 {
		t.Fatalf("result says pipeline %d", res.Pipeline)
	}
}

// TestRunPipelineUnsupported: a store that cannot keep ops in flight is
// refused, not silently run one op at a time.
func TestRunPipelineUnsupported(t *testing.T) {
	w := genWorkload(t, "seed", 1000)
	_, err := Run(context.Background(), RunConfig{Workers: 2, Pipeline: 4, Store: "memory"}, memory.New(), w)
	if err == nil || !strings.Contains(err.Error(), "--pipeline 4") {
		t.Fatalf("want a refusal naming --pipeline, got %v", err)
	}
}
