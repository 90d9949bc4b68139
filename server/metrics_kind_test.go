package server

import (
	"testing"
	"time"

	"allot/inventory"
)

// A kind the metrics table has no slot of its own for (a new op kind
// past kindSlots) is counted as "other" instead of indexing out of range:
// metrics once held one slot per kind known when they were written, and a
// new kind panicked the server.
func TestMetricsCountAKindPastTheTable(t *testing.T) {
	var m metrics
	var tally opTally
	for _, k := range []inventory.Kind{inventory.KindCapture, inventory.Kind(kindSlots), inventory.Kind(255)} {
		tally.add(k, resultOf(inventory.CodeOK))
	}
	m.flush(protocolRESP, &tally, time.Millisecond)
	if got := m.ops[protocolRESP][0][resultOf(inventory.CodeOK)].Load(); got != 2 {
		t.Fatalf("kinds past the table counted as other: %d, want 2", got)
	}
	if got := m.ops[protocolRESP][int(inventory.KindCapture)][resultOf(inventory.CodeOK)].Load(); got != 1 {
		t.Fatalf("capture counted %d times, want 1", got)
	}
	if kindLabel(0) != "other" {
		t.Fatalf("slot 0 is labelled %q", kindLabel(0))
	}
}
