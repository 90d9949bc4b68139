package store

import (
	"strings"
	"testing"
	"time"

	"allot/inventory"
)

// PrepareCalls answers bad requests itself, hands on the rest in order,
// clears stale replies, and refuses a call without a kind by its index.
func TestPrepareCalls(t *testing.T) {
	g := inventory.GroupKey{SKU: "s", Condition: "new", Source: "x"}
	line := []CartLine{{Group: g, N: 1}}
	calls := []CheckoutCall{
		{Kind: CallHold, Hold: "a", TTL: time.Second, Lines: line, Code: CheckoutMismatch, Err: errTest},
		{Kind: CallHold, Hold: "b", TTL: 0, Lines: line},
		{Kind: CallConfirm, Hold: "bad\x01id"},
		{Kind: CallCancel, Hold: "c"},
		{Kind: CallHold, Hold: "d", TTL: time.Second, Lines: make([]CartLine, CartLinesMax+1)},
	}
	var sent []int
	if err := PrepareCalls(calls, func(i int, c *CheckoutCall) { sent = append(sent, i) }); err != nil {
		t.Fatal(err)
	}
	if len(sent) != 2 || sent[0] != 0 || sent[1] != 3 {
		t.Fatalf("sent %v, want [0 3]", sent)
	}
	if calls[0].Err != nil || calls[0].Code != CheckoutOK {
		t.Errorf("a sent call keeps its old reply: %s %v", calls[0].Code, calls[0].Err)
	}
	for _, i := range []int{1, 2, 4} {
		if calls[i].Code != CheckoutInvalid || calls[i].Res.Code != CheckoutInvalid || calls[i].Res.Detail == "" {
			t.Errorf("call %d: %s %+v, want invalid with a detail", i, calls[i].Code, calls[i].Res)
		}
	}
	err := PrepareCalls([]CheckoutCall{{Kind: CallHold, Hold: "a", TTL: time.Second, Lines: line}, {Hold: "x"}}, func(int, *CheckoutCall) {})
	if err == nil || !strings.Contains(err.Error(), "call 1 has no kind") {
		t.Fatalf("a call without a kind: got %v", err)
	}
}

var errTest = errorString("stale")

type errorString string

func (e errorString) Error() string { return string(e) }
