package store

import (
	"testing"

	"allot/inventory"
)

// TestHoldStateIsTheStateMachines: a store's hold state is the state
// machine's type, names and numbers (one definition, no mapping between
// two), and every wire name parses back to it.
func TestHoldStateIsTheStateMachines(t *testing.T) {
	for _, st := range []inventory.HoldState{inventory.HoldHeld, inventory.HoldConfirmed, inventory.HoldCancelled, inventory.HoldExpired} {
		got, err := ParseHoldState(st.String())
		if err != nil || got != st {
			t.Errorf("ParseHoldState(%q) = %v, %v; want %v", st.String(), got, err, st)
		}
	}
	if s := HoldUnknown.String(); s != "unknown" {
		t.Errorf("HoldUnknown is %q", s)
	}
	if _, err := ParseHoldState("unknown"); err == nil {
		t.Error("\"unknown\" parsed as a wire state")
	}
	if s := inventory.HoldState(9).String(); s != "hold_state(9)" {
		t.Errorf("an unknown number prints as %q", s)
	}
}
