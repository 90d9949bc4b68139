package kill

import (
	"bytes"
	"strings"
	"testing"

	"allot/store"
)

// The audit's SIGKILL is a process crash, and durability "write" promises
// that a process crash loses no acknowledged op (DESIGN.md, durability
// modes): a store in that mode that loses acknowledged ops to the kill
// broke its mode's promise, and the audit must fail it (exit non-zero),
// not only print it. Only "none" may lose them.
func TestPowerWriteModeLosingAckedOpsFails(t *testing.T) {
	res := audit(t, crashDropTail, store.DurabilityWrite)
	if res.LostAcked == 0 {
		t.Fatalf("the fake dropped no acknowledged op: %+v", res)
	}
	if !res.Failed() {
		t.Fatalf("write mode lost %d acknowledged ops to a process crash and the audit passed (verdict %q)", res.LostAcked, res.Verdict())
	}
	var b bytes.Buffer
	if err := WriteTable(&b, []*Result{res}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "FAILED") {
		t.Fatalf("the table does not say FAILED:\n%s", b.String())
	}
	// A correct store in write mode passes.
	if res := audit(t, crashKeepAll, store.DurabilityWrite); res.Failed() || res.LostAcked != 0 {
		t.Fatalf("a correct store in write mode: %+v", res)
	}
}
