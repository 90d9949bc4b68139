package inventory

import "testing"

// KeysKept counts the keys held, KeyKept tells a kept key (a repeat or a
// mismatch) from a new one; once every key is past the window,
// CollectKeys drops them all, the chunk still being appended to included
// (which Collect leaves), so that a table held at the engine's limit
// (engine.Config.KeysMax) drains however few keys it holds.
func TestKeysKeptDrainPastTheWindow(t *testing.T) {
	s := NewState()
	s.SetRetention(1000)
	s.SetTime(1)
	g := GroupKey{SKU: "s", Condition: "c", Source: "o"}
	for _, k := range []string{"k1", "k2", "k3"} {
		op := Capture(g, 1)
		op.IdempotencyKey = k
		if res := s.Apply(&op, nil); res.Code != CodeInsufficient || !res.Changed {
			t.Fatalf("capture %s: %+v", k, res)
		}
	}
	if n := s.KeysKept(); n != 3 {
		t.Fatalf("KeysKept %d, want 3", n)
	}
	if !s.KeyKept("k1") || s.KeyKept("k4") {
		t.Fatalf("KeyKept k1 %v, k4 %v", s.KeyKept("k1"), s.KeyKept("k4"))
	}
	s.SetTime(1000)
	s.CollectKeys()
	if n := s.KeysKept(); n != 3 || !s.KeyKept("k3") {
		t.Fatalf("within the window: KeysKept %d, k3 kept %v", n, s.KeyKept("k3"))
	}
	s.SetTime(1001)
	if s.KeyKept("k1") {
		t.Fatal("k1 is kept past its window")
	}
	s.Collect()
	if n := s.KeysKept(); n != 3 {
		t.Fatalf("Collect dropped the only chunk: KeysKept %d", n)
	}
	s.CollectKeys()
	if n := s.KeysKept(); n != 0 {
		t.Fatalf("KeysKept %d once every key is past the window and collected, want 0", n)
	}
	if st := s.Stats(); st.Keys != 0 || st.KeyBytes != 0 {
		t.Fatalf("stats after the drain: %d keys, %d bytes", st.Keys, st.KeyBytes)
	}
	// The table goes on: a key used again binds anew.
	op := Capture(g, 1)
	op.IdempotencyKey = "k1"
	if res := s.Apply(&op, nil); res.Repeat || s.KeysKept() != 1 || !s.KeyKept("k1") {
		t.Fatalf("k1 again: %+v, kept %d", res, s.KeysKept())
	}
	if res := s.Apply(&op, nil); !res.Repeat {
		t.Fatalf("k1 repeated: %+v", res)
	}
}
