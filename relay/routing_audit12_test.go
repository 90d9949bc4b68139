package relay_test

import (
	"fmt"
	"testing"

	"allot/changes"
	"allot/relay"
)

// TestCatalogEventsRouteByTheirSKU: a catalog event touches no row but
// names its record's SKU; a consumer bound to that SKU gets it (it went
// to "_" with the confirms).
func TestCatalogEventsRouteByTheirSKU(t *testing.T) {
	for _, op := range []string{"catalog.set", "catalog.del"} {
		ev := changes.Event{Seq: 1, Op: op, SKU: "SKU-1", Rows: []changes.Row{}}
		if got := fmt.Sprint(relay.RoutingKeys(&ev, nil)); got != "[SKU-1]" {
			t.Errorf("%s: routing keys %s, want [SKU-1]", op, got)
		}
	}
	confirm := changes.Event{Seq: 2, Op: "confirm", Hold: "h1", Rows: []changes.Row{}}
	if got := fmt.Sprint(relay.RoutingKeys(&confirm, nil)); got != "[_]" {
		t.Errorf("confirm: routing keys %s, want [_]", got)
	}
}
