package server

import (
	"strings"
	"testing"
)

// TestRoundBoundCountsSearchOffset: a round's searches run under one hold
// of the engine's lock (engine.SubmitBatch), so the round's bound counts
// the index entries its searches walk, their offsets included, not only
// the hits they return. A pipeline of searches with OFFSET 999 LIMIT 1
// (1,000 entries each) went in one round whatever its depth: 1,024 such
// searches at OFFSET 100000 held the lock for seconds while every other
// client's op waited.
func TestRoundBoundCountsSearchOffset(t *testing.T) {
	s := unservedRESPServer(t)
	serveRESPPipeline(s, 1, respSearchSetup)

	const n = 64
	writes := 0
	var out strings.Builder
	pc := newRESPPipeConn(strings.Repeat(rawCommand("SEARCH", "a", "OFFSET", "999", "LIMIT", "1"), n), 1)
	pc.onWrite = func(p []byte) { writes++; out.Write(p) }
	c := newRESPConn(s, pc, 2)
	c.serve()
	if got := strings.Count(out.String(), "sku0999"); got != n {
		t.Fatalf("%d of %d searches answered with sku0999: %.200q", got, n, out.String())
	}
	// Each search walks 1,000 entries: a round holds at most
	// roundSearchStepsMax of them, plus the one search that passes it.
	perRound := roundSearchStepsMax/1000 + 1
	if want := (n + perRound - 1) / perRound; writes < want {
		t.Fatalf("%d searches of 1,000 index steps each were served in %d rounds (writes): want at least %d (at most %d steps a round)",
			n, writes, want, roundSearchStepsMax)
	}
	t.Logf("%d searches in %d rounds", n, writes)
}
