package server_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"allot/inventory"
)

// The checkout's outcomes are results of their own on /metrics, not
// errors: a confirm of an expired or a cancelled hold, a cancel of a
// confirmed one, a hold id used again with other lines. They were all
// counted as result="error" (the label of an engine that failed or
// refused), since the result labels stopped at the first five codes.
func TestAudit22CheckoutOutcomesAreNotErrors(t *testing.T) {
	s, c := fsyncServerClient(t)
	ctx := context.Background()
	row := inventory.RowKey{SKU: "s", Warehouse: "w", Condition: "c", Source: "o"}
	if _, err := c.Stock(ctx, row, 10, 1); err != nil {
		t.Fatal(err)
	}
	one := []inventory.Demand{{Group: row.Group(), N: 1}}
	two := []inventory.Demand{{Group: row.Group(), N: 2}}
	want := func(what string, res inventory.Result, err error, code inventory.Code) {
		t.Helper()
		if err != nil || res.Code != code {
			t.Fatalf("%s: %s %s, %v; want %s", what, res.Code, res.Detail, err, code)
		}
	}
	res, err := c.Hold(ctx, "h1", time.Minute, one)
	want("hold h1", res, err, inventory.CodeOK)
	res, err = c.Hold(ctx, "h1", time.Minute, two)
	want("hold h1 again, other lines", res, err, inventory.CodeMismatch)
	res, err = c.Cancel(ctx, "h1")
	want("cancel h1", res, err, inventory.CodeOK)
	res, err = c.Confirm(ctx, "h1")
	want("confirm h1", res, err, inventory.CodeCancelled)
	res, err = c.Hold(ctx, "h2", time.Minute, one)
	want("hold h2", res, err, inventory.CodeOK)
	res, err = c.Confirm(ctx, "h2")
	want("confirm h2", res, err, inventory.CodeOK)
	res, err = c.Cancel(ctx, "h2")
	want("cancel h2", res, err, inventory.CodeConfirmed)
	res, err = c.Hold(ctx, "h3", time.Millisecond, one)
	want("hold h3", res, err, inventory.CodeOK)
	time.Sleep(20 * time.Millisecond)
	res, err = c.Confirm(ctx, "h3")
	want("confirm h3, past its ttl", res, err, inventory.CodeExpired)

	text := getMetrics(t, s.HTTPAddr())
	for _, line := range []string{
		`allot_ops_total{op="hold",protocol="resp",result="ok"} 3`,
		`allot_ops_total{op="hold",protocol="resp",result="mismatch"} 1`,
		`allot_ops_total{op="confirm",protocol="resp",result="cancelled"} 1`,
		`allot_ops_total{op="confirm",protocol="resp",result="expired"} 1`,
		`allot_ops_total{op="cancel",protocol="resp",result="confirmed"} 1`,
		`allot_ops_total{op="hold",protocol="resp",result="error"} 0`,
		`allot_ops_total{op="confirm",protocol="resp",result="error"} 0`,
		`allot_ops_total{op="cancel",protocol="resp",result="error"} 0`,
	} {
		if !strings.Contains(text, "\n"+line+"\n") {
			t.Errorf("/metrics lacks %s", line)
		}
	}
}
