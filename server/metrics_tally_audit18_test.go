package server

import (
	"testing"
	"time"

	"allot/inventory"
)

// TestTallyFlushCountsEveryKind: flush walks only the kinds a tally
// touched (opTally.kinds); every count of every touched kind reaches the
// shared counters, the first and last kind slots included, each kind's
// latency histogram gets one sample per op, and the tally is empty after.
func TestTallyFlushCountsEveryKind(t *testing.T) {
	var m metrics
	var tally opTally
	adds := []struct {
		kind inventory.Kind
		res  result
		n    int
	}{
		{inventory.KindCapture, resultOf(inventory.CodeOK), 5},
		{inventory.KindCapture, resultOf(inventory.CodeInsufficient), 2},
		{inventory.KindRelease, resultError, 1},
		{inventory.Kind(kindSlots - 1), resultOf(inventory.CodeOK), 3},
		{inventory.Kind(200), resultOf(inventory.CodeOK), 4}, // counted as kind 0, "other"
	}
	for _, a := range adds {
		for range a.n {
			tally.add(a.kind, a.res)
		}
	}
	m.flush(protocolRESP, &tally, 30*time.Microsecond)
	perKind := map[int]uint64{}
	for _, a := range adds {
		perKind[kindSlot(a.kind)] += uint64(a.n)
		if got := m.ops[protocolRESP][kindSlot(a.kind)][a.res].Load(); got != uint64(a.n) {
			t.Errorf("kind %d result %v: %d ops counted, want %d", a.kind, a.res, got, a.n)
		}
	}
	for k := range kindSlots {
		if got := m.latency[protocolRESP][k].count.Load(); got != perKind[k] {
			t.Errorf("kind slot %d: %d latency samples, want %d", k, got, perKind[k])
		}
	}
	if tally != (opTally{}) {
		t.Errorf("tally not cleared by flush: %+v", tally)
	}
	// A second flush of the empty tally adds nothing.
	m.flush(protocolRESP, &tally, time.Millisecond)
	if got := m.ops[protocolRESP][kindSlot(inventory.KindCapture)][resultOf(inventory.CodeOK)].Load(); got != 5 {
		t.Errorf("after an empty flush: %d capture OKs, want 5", got)
	}
}
