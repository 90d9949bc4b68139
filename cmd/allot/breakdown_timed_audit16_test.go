package main

import (
	"encoding/json"
	"strings"
	"testing"

	"allot/bench"
	"allot/engine"
	"allot/server/servertest"
)

// --breakdown covers the timed run only: its "before" was read before the
// rows were loaded and its "after" once they were read back for the
// check, so the engine's per-op stages counted every STOCK.SET of the load
// and every read of the check (3,000 ops came out as 5,000 and more).
func TestBreakdownCoversTheTimedRunOnly(t *testing.T) {
	s := servertest.Start(t, servertest.Options{Durability: engine.DurabilityFsync})
	const ops = 3000
	code, out, errOut := runCmd(t, "bench", "--store", "allot", "--addr", s.RESPAddr(), "--http-addr", s.HTTPAddr(),
		"--preset", "seed", "--ops", "3000", "--quiet", "--breakdown", "--json")
	if code != 0 {
		t.Fatalf("exit %d:\n%s%s", code, out, errOut)
	}
	var res bench.Result
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &res); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if res.Breakdown == nil {
		t.Fatalf("no breakdown:\n%s%s", out, errOut)
	}
	for _, st := range res.Breakdown.Stages {
		if st.Stage == "queue" {
			// The server records an op's stages as its reply leaves: the
			// last op of each worker (16) may not be in yet when the run
			// ends, and the load's last one may come in after it began.
			if st.Count > ops+1 || st.Count < ops-2*16 {
				t.Fatalf("the queue stage counted %d ops, the run made %d (rows loaded: 1000)", st.Count, ops)
			}
			return
		}
	}
	t.Fatalf("no queue stage: %+v", res.Breakdown.Stages)
}
