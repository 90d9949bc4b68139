package bench

import (
	"fmt"
	"math/big"

	"allot/inventory"
)

// ViolationsListMax caps the violations a check lists; all are counted.
const ViolationsListMax = 50

// checker collects violations.
type checker struct{ res CheckResult }

func (c *checker) addf(format string, args ...any) {
	c.res.ViolationCount++
	if len(c.res.Violations) < ViolationsListMax {
		c.res.Violations = append(c.res.Violations, fmt.Sprintf(format, args...))
	}
}

// Check compares the rows a store holds after a run with what the run's
// outcomes imply, as DESIGN.md says:
//
//   - every applied capture's lines are in ascending warehouse order, name
//     warehouses of its group, have counts above zero, and sum to its n;
//   - per group: final total = initial total + sum of applied releases -
//     sum of applied captures' n;
//   - per row: final count = initial count + releases to it - capture
//     lines taken from it;
//   - no row is below zero; no loaded row is missing; no other row holds
//     stock.
//
// An op whose outcome is unknown (the session returned an error) may or may
// not have been applied: its group's total is then checked against the
// range both possibilities allow, and its rows only for being non-negative.
// Refused and unrun ops count as not applied.
func Check(o *Outcomes, final []inventory.Row) CheckResult {
	p := o.plan
	w := p.w
	var c checker
	nRows, nGroups := len(w.Initial), len(p.groups)
	released := make([]int64, nRows)
	taken := make([]int64, nRows)
	captured := make([]int64, nGroups)
	releasedGroup := make([]int64, nGroups)
	unknownCapture := make([]int64, nGroups)
	unknownRelease := make([]int64, nGroups)
	badLines := make([]bool, nGroups) // a capture's lines were wrong: per-row accounting is moot

	for i := range w.Ops {
		op := &w.Ops[i]
		g := p.opGroup[i]
		switch o.ops[i].status {
		case OpNotRun, OpRefused:
			continue
		case OpUnknown:
			if op.Kind == inventory.KindCapture {
				unknownCapture[g] += op.N
			} else {
				unknownRelease[g] += op.N
			}
			continue
		}
		if op.Kind == inventory.KindRelease {
			released[p.opRow[i]] += op.N
			releasedGroup[g] += op.N
			continue
		}
		captured[g] += op.N
		if !checkLines(&c, p, o, i) {
			badLines[g] = true
			continue
		}
		for _, l := range o.Lines(i) {
			taken[p.groups[g].rows[p.warehouseIndex(g, l.Warehouse)]] += l.Count
		}
	}

	// Final rows, by row number; extras are stray stock.
	finalCount := make([]int64, nRows)
	present := make([]bool, nRows)
	for _, r := range final {
		if r.Count < 0 {
			c.addf("row %v is below zero: %d", r.Key, r.Count)
		}
		i, ok := p.rowIndex[r.Key]
		if !ok {
			if r.Count != 0 {
				c.addf("row %v holds %d units but the workload never loaded it", r.Key, r.Count)
			}
			continue
		}
		if present[i] {
			c.addf("row %v read back twice", r.Key)
		}
		present[i], finalCount[i] = true, r.Count
	}
	for i, ok := range present {
		if !ok {
			c.addf("row %v is missing from the store", w.Initial[i].Key)
		}
	}

	// Totals are summed exactly: rows may hold up to 2^62-1 each.
	var initial, got, want, lo, hi big.Int
	for gi := range p.groups {
		g := &p.groups[gi]
		initial.SetInt64(0)
		got.SetInt64(0)
		for _, r := range g.rows {
			initial.Add(&initial, big.NewInt(w.Initial[r].Count))
			got.Add(&got, big.NewInt(finalCount[r]))
		}
		want.Add(&initial, big.NewInt(releasedGroup[gi]))
		want.Sub(&want, big.NewInt(captured[gi]))
		if unknownCapture[gi] == 0 && unknownRelease[gi] == 0 {
			if cmp := got.Cmp(&want); cmp != 0 {
				// More units than the acknowledged ops leave means captures
				// were acknowledged without taking stock: those units can be
				// sold again, which is overselling. Fewer means units lost.
				what := "captures acknowledged without taking stock: oversold"
				if cmp < 0 {
					what = "units lost"
				}
				c.addf("group %v holds %s units, want initial %s + released %d - captured %d = %s (%s by %s)",
					g.key, got.String(), initial.String(), releasedGroup[gi], captured[gi], want.String(), what, new(big.Int).Abs(new(big.Int).Sub(&want, &got)).String())
			}
		} else {
			lo.Sub(&want, big.NewInt(unknownCapture[gi]))
			hi.Add(&want, big.NewInt(unknownRelease[gi]))
			if got.Cmp(&lo) < 0 || got.Cmp(&hi) > 0 {
				c.addf("group %v holds %s units, want %s..%s (initial %s + released %d - captured %d, with %d capture and %d release units of failed ops unknown)",
					g.key, got.String(), lo.String(), hi.String(), initial.String(), releasedGroup[gi], captured[gi], unknownCapture[gi], unknownRelease[gi])
			}
			continue
		}
		if badLines[gi] {
			continue
		}
		for _, r := range g.rows {
			row := &w.Initial[r]
			if want := row.Count + released[r] - taken[r]; present[r] && finalCount[r] != want {
				c.addf("row %v holds %d, want initial %d + released %d - taken by captures %d = %d",
					row.Key, finalCount[r], row.Count, released[r], taken[r], want)
			}
		}
	}
	c.res.OK = c.res.ViolationCount == 0
	if c.res.Violations == nil {
		c.res.Violations = []string{}
	}
	return c.res
}

// checkLines checks the shape of applied capture i's lines and reports
// whether they are sound.
func checkLines(c *checker, p *Plan, o *Outcomes, i int) bool {
	op := &p.w.Ops[i]
	g := p.opGroup[i]
	lines := o.Lines(i)
	var sum int64
	ok := true
	prev := -1
	for _, l := range lines {
		wi := p.warehouseIndex(g, l.Warehouse)
		switch {
		case wi < 0:
			c.addf("op %d: capture of %d from group %v took %d from warehouse %q, which is not in the group", i+1, op.N, op.Group(), l.Count, l.Warehouse)
			ok = false
		case wi <= prev:
			c.addf("op %d: capture of %d from group %v returned lines %v out of ascending warehouse order", i+1, op.N, op.Group(), lines)
			ok = false
		default:
			prev = wi
		}
		if l.Count <= 0 {
			c.addf("op %d: capture of %d from group %v returned line %v with a count not above zero", i+1, op.N, op.Group(), l)
			ok = false
		}
		sum += l.Count
	}
	if sum != op.N {
		c.addf("op %d: capture of %d from group %v returned lines %v summing to %d", i+1, op.N, op.Group(), lines, sum)
		ok = false
	}
	return ok
}
