package inventory

import (
	"fmt"
	"testing"
	"unsafe"
)

// A decoder reads hold ids and idempotency keys through its intern table:
// each new one is seen once, and a decoder that follows a change stream
// for days reads millions. A follower's table stays bounded, and a string
// read again while it is in the table is the same string.
func TestDecoderInternIsBounded(t *testing.T) {
	const holds = 3 * InternMax
	var payload []byte
	for i := 0; i < holds; i++ {
		op := Hold(fmt.Sprintf("hold-%07d", i), 60_000, []Demand{{Group: gk("sku-1"), N: 1}})
		payload = AppendOp(payload, &op)
	}
	d := NewFollowDecoder()
	d.Reset(payload)
	var last Op
	for i := 0; i < holds; i++ {
		var op Op
		if err := d.Op(&op); err != nil {
			t.Fatalf("op %d: %v", i, err)
		}
		if want := fmt.Sprintf("hold-%07d", i); op.Hold != want {
			t.Fatalf("op %d: hold %q, want %q", i, op.Hold, want)
		}
		last = op
		if n := len(d.intern); n > InternMax {
			t.Fatalf("after %d holds the intern table holds %d strings, over %d", i+1, n, InternMax)
		}
	}
	if !d.Done() {
		t.Fatal("bytes left after the last op")
	}
	// The SKU is one string while the table keeps it (shared, not copied).
	d.Reset(AppendOp(nil, &last))
	var again Op
	if err := d.Op(&again); err != nil {
		t.Fatal(err)
	}
	if unsafe.StringData(again.Lines[0].Group.SKU) != unsafe.StringData(last.Lines[0].Group.SKU) {
		t.Error("the same SKU read twice in a row is two strings: interning is off")
	}
}
