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
		if got := string(AppendResult(nil, c.kind, &c.r)); got != c.want {
			t.Errorf("%v %+v:\n got %q\nwant %q", c.kind, c.r, got, c.want)
		}
	}
}
