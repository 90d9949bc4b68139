package workload

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
	"testing"

	"allot/inventory"
)

// FuzzGenerate: for any small params, Generate succeeds exactly when
// Validate does; what it makes has the rows and ops asked for, distinct
// rows drawn from the params' ranges, quantities of 1..3, captures naming a
// group only; every op succeeds in order; the same params make the same
// workload; and the op file round-trips.
func FuzzGenerate(f *testing.F) {
	f.Add(uint16(20), uint16(5), uint8(4), uint8(1), uint8(1), uint16(300), uint64(1))
	f.Add(uint16(27), uint16(1), uint8(3), uint8(3), uint8(3), uint16(50), uint64(0))
	f.Add(uint16(28), uint16(1), uint8(3), uint8(3), uint8(3), uint16(50), uint64(0))
	f.Add(uint16(1), uint16(1), uint8(1), uint8(1), uint8(1), uint16(1), ^uint64(0))
	f.Add(uint16(40), uint16(3), uint8(12), uint8(2), uint8(2), uint16(900), uint64(9))
	f.Add(uint16(0), uint16(3), uint8(0), uint8(4), uint8(2), uint16(0), uint64(9))
	f.Fuzz(func(t *testing.T, rows, skus uint16, warehouses, conditions, sources uint8, ops uint16, seed uint64) {
		p := Params{
			Rows: int(rows % 300), SKUs: int(skus % 64), Warehouses: int(warehouses % 104),
			Conditions: int(conditions % 5), Sources: int(sources % 5), Ops: int(ops % 2000), Seed: seed,
		}
		v := p
		verr := v.Validate()
		w, err := Generate(p)
		if (err == nil) != (verr == nil) {
			t.Fatalf("%+v: Generate %v, Validate %v", p, err, verr)
		}
		if err != nil {
			return
		}
		if len(w.Initial) != p.Rows || len(w.Ops) != p.Ops {
			t.Fatalf("%+v: %d rows and %d ops", p, len(w.Initial), len(w.Ops))
		}
		keys := map[inventory.RowKey]bool{}
		for _, r := range w.Initial {
			if keys[r.Key] {
				t.Fatalf("%+v: row %v twice", p, r.Key)
			}
			keys[r.Key] = true
			sku, ok := strings.CutPrefix(r.Key.SKU, "sku-")
			n, err := strconv.Atoi(sku)
			wh, ok2 := strings.CutPrefix(r.Key.Warehouse, "w")
			m, err2 := strconv.Atoi(wh)
			if !ok || err != nil || n < 1 || n > p.SKUs || !ok2 || err2 != nil || m < 1 || m > p.Warehouses ||
				!slices.Contains(conditionNames[:p.Conditions], r.Key.Condition) ||
				!slices.Contains(sourceNames[:p.Sources], r.Key.Source) {
				t.Fatalf("%+v: row %v outside the params' ranges", p, r.Key)
			}
			if r.Count < 0 || r.Count > InitialCountMax || r.Price < PriceMin || r.Price > PriceMax {
				t.Fatalf("%+v: row %v count %d price %d", p, r.Key, r.Count, r.Price)
			}
		}
		for i, op := range w.Ops {
			if op.N < 1 || op.N > QuantityOpMax {
				t.Fatalf("%+v: op %d %+v", p, i, op)
			}
			if op.Kind == inventory.KindCapture && op.Key.Warehouse != "" {
				t.Fatalf("%+v: capture %d names warehouse %q", p, i, op.Key.Warehouse)
			}
			if op.Kind == inventory.KindRelease && !keys[op.Key] {
				t.Fatalf("%+v: release %d to unloaded row %v", p, i, op.Key)
			}
		}
		if _, err := Verify(w); err != nil {
			t.Fatalf("%+v: %v", p, err)
		}
		again, err := Generate(p)
		if err != nil || !slices.Equal(again.Initial, w.Initial) || !slices.Equal(again.Ops, w.Ops) || again.Params != w.Params {
			t.Fatalf("%+v: a second Generate differs (%v)", p, err)
		}
		var b bytes.Buffer
		if err := w.Write(&b); err != nil {
			t.Fatalf("%+v: Write: %v", p, err)
		}
		back, err := Read(bytes.NewReader(b.Bytes()))
		if err != nil {
			t.Fatalf("%+v: Read of what Write made: %v", p, err)
		}
		if back.Params != w.Params || !slices.Equal(back.Initial, w.Initial) || !slices.Equal(back.Ops, w.Ops) {
			t.Fatalf("%+v: the op file does not round-trip", p)
		}
	})
}
