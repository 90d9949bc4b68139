package resp

import (
	"testing"

	"allot/inventory"
)

func TestAppendResult(t *testing.T) {
	cases := []struct {
		kind inventory.Kind
		r    inventory.Result
		want string
	}{
		{inventory.KindCapture, inventory.Result{Lines: []inventory.Line{{Warehouse: "w1", Count: 2}, {Warehouse: "w2", Count: 1}}},
			"*2\r\n*2\r\n$2\r\nw1\r\n:2\r\n*2\r\n$2\r\nw2\r\n:1\r\n"},
		{inventory.KindCapture, inventory.Result{Code: inventory.CodeInsufficient, Available: 1}, "-INSUFFICIENT available 1\r\n"},
		{inventory.KindRelease, inventory.Result{Count: 7}, ":7\r\n"},
		{inventory.KindRelease, inventory.Result{Code: inventory.CodeNotFound}, "-NOTFOUND no such row\r\n"},
		{inventory.KindRelease, inventory.Result{Code: inventory.CodeOverflow, Detail: "release would carry the count past 4611686018427387903"},
			"-ERR release would carry the count past 4611686018427387903\r\n"},
		{inventory.KindStock, inventory.Result{Count: 5, Price: 100}, "+OK\r\n"},
		{inventory.KindGet, inventory.Result{Count: 5, Price: 100}, "*2\r\n:5\r\n:100\r\n"},
		{inventory.KindGet, inventory.Result{Code: inventory.CodeNotFound}, "*-1\r\n"},
		{inventory.KindAvailable, inventory.Result{Count: 12}, ":12\r\n"},
		{inventory.KindCapture, inventory.Result{Code: inventory.CodeInvalid, Detail: "sku is empty"}, "-ERR sku is empty\r\n"},
		{inventory.KindCapture, inventory.Result{Code: inventory.CodeInvalid, Detail: "a\r\nb"}, "-ERR a  b\r\n"},
	}
	for _, c := range cases {
		if got := string(AppendResult(nil, &inventory.Op{Kind: c.kind}, &c.r)); got != c.want {
			t.Errorf("%v %+v:\n got %q\nwant %q", c.kind, c.r, got, c.want)
		}
	}
}

func TestAppendResultCheckout(t *testing.T) {
	g := inventory.GroupKey{SKU: "s 1", Condition: "new", Source: "sup"}
	hold := inventory.Hold("h1", 1000, []inventory.Demand{{Group: inventory.GroupKey{SKU: "x", Condition: "c", Source: "s"}, N: 1}, {Group: g, N: 2}})
	alloc := []inventory.Allocation{{Row: g.Row("w1"), Count: 2}}
	cases := []struct {
		op   inventory.Op
		r    inventory.Result
		want string
	}{
		{hold, inventory.Result{ExpiresAt: 1700000000000, Allocations: alloc},
			"*2\r\n:1700000000000\r\n*1\r\n*5\r\n$3\r\ns 1\r\n$2\r\nw1\r\n$3\r\nnew\r\n$3\r\nsup\r\n:2\r\n"},
		{hold, inventory.Result{Code: inventory.CodeInsufficient, ShortLine: 1, Available: 1}, "-INSUFFICIENT s 1 new sup available 1\r\n"},
		{hold, inventory.Result{Code: inventory.CodeMismatch, Detail: "hold h1 exists with other lines"}, "-MISMATCH hold h1 exists with other lines\r\n"},
		{inventory.Order(hold.Lines), inventory.Result{Allocations: alloc},
			"*1\r\n*5\r\n$3\r\ns 1\r\n$2\r\nw1\r\n$3\r\nnew\r\n$3\r\nsup\r\n:2\r\n"},
		{inventory.Confirm("h1"), inventory.Result{}, "+OK\r\n"},
		{inventory.Confirm("h1"), inventory.Result{Code: inventory.CodeExpired}, "-EXPIRED hold h1 expired\r\n"},
		{inventory.Confirm("h1"), inventory.Result{Code: inventory.CodeCancelled}, "-CANCELLED hold h1 was cancelled\r\n"},
		{inventory.Cancel("h1"), inventory.Result{Code: inventory.CodeConfirmed}, "-CONFIRMED hold h1 was confirmed\r\n"},
		{inventory.Cancel("h1"), inventory.Result{Code: inventory.CodeNotFound}, "-NOTFOUND no such hold h1\r\n"},
		{inventory.HoldGet("h1"), inventory.Result{Code: inventory.CodeNotFound}, "*-1\r\n"},
		{inventory.HoldGet("h1"), inventory.Result{State: inventory.HoldHeld, ExpiresAt: 5, Allocations: alloc},
			"*3\r\n$4\r\nheld\r\n:5\r\n*1\r\n*5\r\n$3\r\ns 1\r\n$2\r\nw1\r\n$3\r\nnew\r\n$3\r\nsup\r\n:2\r\n"},
	}
	for _, c := range cases {
		if got := string(AppendResult(nil, &c.op, &c.r)); got != c.want {
			t.Errorf("%v %+v:\n got %q\nwant %q", c.op.Kind, c.r, got, c.want)
		}
	}
}
