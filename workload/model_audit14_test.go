package workload

import (
	"testing"

	"allot/inventory"
)

// A group of rows near inventory.CountMax holds more units than an int64:
// the model's total saturates, as inventory.Allocate's does, instead of
// wrapping negative and refusing a capture (the bench's one-worker check
// then called a sound store's capture oversold).
func TestModelAvailableSaturates(t *testing.T) {
	var rows []inventory.Row
	for _, w := range []string{"w1", "w2", "w3"} {
		rows = append(rows, inventory.Row{Key: inventory.RowKey{SKU: "s", Warehouse: w, Condition: "new", Source: "x"}, Count: inventory.CountMax})
	}
	m, err := NewModel(rows)
	if err != nil {
		t.Fatal(err)
	}
	g := rows[0].Key.Group()
	if got := m.Available(g); got < inventory.CountMax {
		t.Fatalf("available %d for three rows of %d", got, int64(inventory.CountMax))
	}
	lines, _, ok := m.Capture(g, 5)
	if !ok || len(lines) != 1 || lines[0].Warehouse != "w1" || lines[0].Count != 5 {
		t.Fatalf("capture of 5: lines %v, ok %v", lines, ok)
	}
}
