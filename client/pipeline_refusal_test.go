package client_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"allot/client"
	"allot/inventory"
)

// A standby refuses every op of a pipeline of several, naming the
// primary. The pipeline's outcome is unknown (an op before a refusal may
// have applied elsewhere), so PrimaryOf, which means "not applied", does
// not see the address; PrimaryNamed does, so that a pipelined caller can
// go to the primary. A pipeline of one op keeps the refusal's own class.
func TestPipelineRefusalNamesThePrimary(t *testing.T) {
	s := startScripted(t)
	s.reply.Store(func(int32) string { return "-UNAVAILABLE not primary, primary at 127.0.0.1:7379\r\n" })
	c, err := client.New(client.Config{Addr: s.addr()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	g := inventory.GroupKey{SKU: "s", Condition: "c", Source: "o"}
	ops := []inventory.Op{inventory.Stock(g.Row("w1"), 1, 1), inventory.Stock(g.Row("w2"), 1, 1)}
	for _, n := range []int{2, 1} {
		cn, err := c.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		err = cn.Pipeline(ctx, ops[:n], make([]inventory.Result, n))
		cn.Close()
		addr, named := client.PrimaryNamed(err)
		if !named || addr != "127.0.0.1:7379" {
			t.Errorf("pipeline of %d: PrimaryNamed(%v) = %q, %v; want the primary", n, err, addr, named)
		}
		_, notApplied := client.PrimaryOf(err)
		switch n {
		case 2:
			var pr *client.PipelineRefusal
			if notApplied || !errors.Is(err, client.ErrOutcomeUnknown) || !errors.As(err, &pr) || pr.Op != 1 ||
				!strings.Contains(err.Error(), "op 1 of a pipeline of 2") {
				t.Errorf("pipeline of 2: %v (PrimaryOf %v); want an unknown outcome naming op 1 of 2", err, notApplied)
			}
		case 1:
			if !notApplied || !errors.Is(err, client.ErrUnavailable) {
				t.Errorf("pipeline of 1: %v (PrimaryOf %v); want the refusal's own class", err, notApplied)
			}
		}
	}
}
