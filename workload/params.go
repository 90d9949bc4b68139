package workload

import (
	"fmt"
	"slices"
	"strings"

	"allot/inventory"
)

// Limits on Params. They bound what a workload can ask for, not what this
// machine has: a workload is built in memory before it runs, and OpsMax
// ops take about 21 GB (allot bench serve, which anyone on the machine
// may call, makes at most 2^25 ops a run).
const (
	// RowsMax bounds Params.Rows.
	RowsMax = 1 << 24
	// OpsMax bounds Params.Ops (an op takes about 80 bytes in memory).
	OpsMax = 1 << 28
	// SKUsMax bounds Params.SKUs.
	SKUsMax = 1 << 24
	// WarehousesMax bounds Params.Warehouses.
	WarehousesMax = 99
)

// Distributions of the original generator.
const (
	PriceMin        = 400
	PriceMax        = 1500
	InitialCountMax = 10
	// QuantityOpMax is the largest n of a generated capture or release.
	QuantityOpMax = 3
	// captureThreshold: an op is a capture when a uniform 64-bit draw is
	// below it, i.e. with probability 0.5.
	captureThreshold = 1 << 63
)

// conditionNames and sourceNames are the fixed, readable identifiers of the
// three conditions and three sources of the original generator.
var (
	conditionNames = [...]string{"new", "open-box", "used"}
	sourceNames    = [...]string{"supplier", "returns", "marketplace"}
)

// Params fully determines a workload.
type Params struct {
	// Name is the preset the params came from ("seed", "hot", "wide"), or
	// "custom"; it labels results and does not change the output.
	Name string
	// Rows is X, the number of distinct rows.
	Rows int
	// SKUs, Warehouses, Conditions and Sources are the ranges rows are
	// drawn from.
	SKUs       int
	Warehouses int
	Conditions int
	Sources    int
	// Ops is Y, the number of capture and release ops.
	Ops int
	// Seed seeds the generator.
	Seed uint64
}

// OpsDefault is Y of every preset.
const OpsDefault = 1_000_000

// SeedDefault is the seed used when none is given.
const SeedDefault = 1

// PresetNames lists the presets, in the order --help shows them.
var PresetNames = []string{"seed", "hot", "wide"}

// Preset returns the params of a named preset.
//
//   - seed: X=1000 rows over 1000 SKUs x 3 warehouses x 3 conditions x 3
//     sources, Y=1,000,000: the published runs.
//   - hot: 5 SKUs x 4 warehouses x 1 condition x 1 source = 20 rows in 5
//     groups, so every capture fights over the same few rows.
//   - wide: X=100,000 rows over 10,000 SKUs.
func Preset(name string) (Params, error) {
	p := Params{Name: name, Warehouses: 3, Conditions: 3, Sources: 3, Ops: OpsDefault, Seed: SeedDefault}
	switch name {
	case "seed":
		p.Rows, p.SKUs = 1000, 1000
	case "hot":
		p.Rows, p.SKUs, p.Warehouses, p.Conditions, p.Sources = 20, 5, 4, 1, 1
	case "wide":
		p.Rows, p.SKUs = 100_000, 10_000
	default:
		return Params{}, fmt.Errorf("workload: unknown preset %q (want one of %s)", name, strings.Join(PresetNames, ", "))
	}
	return p, nil
}

// Keys is the number of distinct row keys the params can draw from.
func (p *Params) Keys() int64 {
	return int64(p.SKUs) * int64(p.Warehouses) * int64(p.Conditions) * int64(p.Sources)
}

// Validate checks the params and fills Name when empty.
func (p *Params) Validate() error {
	if p.Name == "" {
		p.Name = "custom"
	}
	if d := checkName(p.Name); d != "" {
		return fmt.Errorf("workload: name %q %s", p.Name, d)
	}
	switch {
	case p.Rows < 1 || p.Rows > RowsMax:
		return fmt.Errorf("workload: rows must be from 1 to %d, got %d", RowsMax, p.Rows)
	case p.SKUs < 1 || p.SKUs > SKUsMax:
		return fmt.Errorf("workload: skus must be from 1 to %d, got %d", SKUsMax, p.SKUs)
	case p.Warehouses < 1 || p.Warehouses > WarehousesMax:
		return fmt.Errorf("workload: warehouses must be from 1 to %d, got %d", WarehousesMax, p.Warehouses)
	case p.Conditions < 1 || p.Conditions > len(conditionNames):
		return fmt.Errorf("workload: conditions must be from 1 to %d, got %d", len(conditionNames), p.Conditions)
	case p.Sources < 1 || p.Sources > len(sourceNames):
		return fmt.Errorf("workload: sources must be from 1 to %d, got %d", len(sourceNames), p.Sources)
	case p.Ops < 1 || p.Ops > OpsMax:
		return fmt.Errorf("workload: ops must be from 1 to %d, got %d", OpsMax, p.Ops)
	}
	if int64(p.Rows) > p.Keys() {
		return fmt.Errorf("workload: %d rows asked but only %d distinct keys (%d skus x %d warehouses x %d conditions x %d sources): lower the rows or raise the skus",
			p.Rows, p.Keys(), p.SKUs, p.Warehouses, p.Conditions, p.Sources)
	}
	return nil
}

// checkName keeps a name printable in a tab-separated header and in the
// results: an identifier (UTF-8, no control character, C1 included) without
// spaces or '='.
func checkName(s string) string {
	if s == "" || len(s) > 64 {
		return "must be 1 to 64 bytes"
	}
	if slices.ContainsFunc([]byte(s), func(c byte) bool { return c <= ' ' || c == '=' || c == 0x7f }) {
		return "must not contain spaces, '=' or control characters"
	}
	return inventory.CheckID(s)
}
