package bench

import (
	"fmt"
	"math/big"
	"slices"

	"allot/inventory"
	"allot/workload"
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
//   - the allocation rule: a capture that took from a warehouse left every
//     earlier row of its group empty, so such a row ends with no more units
//     than the releases after that capture brought it (releasesAfter);
//     and when the ops were applied in op order (one worker), every
//     capture's lines are the rule's on the group as the ops before it
//     left it (replay);
//   - no row is below zero; no loaded row is missing; no other row holds
//     stock.
//
// An op whose outcome is unknown (the session returned an error) may or may
// not have been applied, but not in part: its group's total is then checked
// against the totals that some set of its unknown ops applied whole gives,
// and each row against what the known ops leave, give or take what the
// unknown ops could move: no more units missing than the unknown captures
// took (in all the group's rows together), no more units over than the
// unknown releases to that row brought. Refused and unrun ops count as not
// applied.
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
	unknownReleaseRow := make([]int64, nRows)
	unknownOps := make(map[int32][]int32) // per group that has some
	badLines := make([]bool, nGroups)     // a capture's lines were wrong: per-row accounting is moot
	// passedBy is, per row, the last applied capture (by op index) that
	// took from a warehouse after it, which leaves it empty; -1: none.
	passedBy := make([]int, nRows)
	for r := range passedBy {
		passedBy[r] = -1
	}

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
				unknownReleaseRow[p.opRow[i]] += op.N
			}
			unknownOps[g] = append(unknownOps[g], int32(i))
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
		lines := o.Lines(i)
		for _, l := range lines {
			taken[p.groups[g].rows[p.warehouseIndex(g, l.Warehouse)]] += l.Count
		}
		for _, r := range p.groups[g].rows[:p.warehouseIndex(g, lines[len(lines)-1].Warehouse)] {
			passedBy[r] = i
		}
	}
	refill := releasesAfter(o, passedBy)
	replay(&c, o, badLines)

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
	var initial, got, want, lo, hi, diff big.Int
	sumsWork := unknownSumsWork
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
		unknown := unknownCapture[gi] != 0 || unknownRelease[gi] != 0
		if !unknown {
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
			} else if sums := unknownSums(w, unknownOps[int32(gi)], &sumsWork); sums != nil {
				// In range, and got - want fits an int64.
				if _, ok := sums[diff.Sub(&got, &want).Int64()]; !ok {
					c.addf("group %v holds %s units, want initial %s + released %d - captured %d = %s changed by some of its %d failed ops applied whole (%d capture and %d release units); no such set gives %s: an op applied in part",
						g.key, got.String(), initial.String(), releasedGroup[gi], captured[gi], want.String(), len(unknownOps[int32(gi)]), unknownCapture[gi], unknownRelease[gi], diff.String())
				}
			}
		}
		if badLines[gi] {
			continue
		}
		// short is what a row lacks of what the known ops leave in it:
		// only an unknown capture can have taken it (from any row of the
		// group), and only an unknown release to that row can have added
		// to it.
		var shortSum int64
		for _, r := range g.rows {
			if !present[r] {
				continue
			}
			row := &w.Initial[r]
			base := row.Count + released[r] - taken[r]
			short := base - finalCount[r]
			switch {
			case !unknown && short != 0:
				c.addf("row %v holds %d, want initial %d + released %d - taken by captures %d = %d",
					row.Key, finalCount[r], row.Count, released[r], taken[r], base)
			case short > unknownCapture[gi] || -short > unknownReleaseRow[r]:
				c.addf("row %v holds %d, want initial %d + released %d - taken by captures %d = %d, less at most %d units of failed captures from its group, plus at most %d units of failed releases to it",
					row.Key, finalCount[r], row.Count, released[r], taken[r], base, unknownCapture[gi], unknownReleaseRow[r])
			}
			if short > 0 {
				shortSum += short
			}
		}
		if unknown && shortSum > unknownCapture[gi] {
			c.addf("group %v: its rows lack %d units of what the acknowledged ops leave, more than its failed captures (%d units) can have taken",
				g.key, shortSum, unknownCapture[gi])
		}
		for _, r := range g.rows {
			if c0 := passedBy[r]; c0 >= 0 && present[r] && finalCount[r] > refill[r] {
				lines := o.Lines(c0)
				c.addf("row %v holds %d units, but op %d, a capture of %d with lines %v, took from warehouse %q after it, which by the allocation rule leaves it empty, and the releases into it that can have come after that op bring at most %d: a capture took from the wrong rows",
					w.Initial[r].Key, finalCount[r], c0+1, w.Ops[c0].N, lines, lines[len(lines)-1].Warehouse, refill[r])
			}
		}
	}
	c.res.OK = c.res.ViolationCount == 0
	if c.res.Violations == nil {
		c.res.Violations = []string{}
	}
	return c.res
}

// releasesAfter returns, for each row that an applied capture passed by
// (passedBy[r], an op index), the most units that releases applied after
// that capture can have brought it: this is how the allocation rule is
// checked. The rule says a capture that took from a warehouse left every
// earlier row of its group empty, from then on only releases add to such a
// row, so it ends with no more units than the releases after the capture.
// A store that takes from the wrong rows while reporting the lines it took
// (a later warehouse first, or part of a row and then the next) keeps
// every total and every row's accounting right; this is what finds it.
//
// Which releases came after the capture is known only in part when workers
// ran ops concurrently: every release of a later op index can have; of the
// earlier ones, only those still in flight when the capture's worker took
// it, at most Outcomes.othersInFlightMax of them (one per other worker, in
// a run that sends one op at a time per worker; the runner says so). Their
// units are bounded by that many times the largest such release, and by
// all of them together. Without the bound every earlier release counts,
// and the check proves little on a long run. A failed release counts
// whatever its index: it may have been applied, and late (a server that
// applies a request its client gave up on).
func releasesAfter(o *Outcomes, passedBy []int) []int64 {
	w := o.plan.w
	after := make([]int64, len(passedBy))
	before := make([]int64, len(passedBy))
	largest := make([]int64, len(passedBy))
	for i := range w.Ops {
		r := o.plan.opRow[i]
		if r < 0 || passedBy[r] < 0 {
			continue
		}
		st := o.ops[i].status
		if st != OpApplied && st != OpUnknown {
			continue
		}
		n := w.Ops[i].N
		if i > passedBy[r] || st == OpUnknown {
			after[r] += n
			continue
		}
		before[r] += n
		largest[r] = max(largest[r], n)
	}
	for r := range after {
		slack := before[r]
		if k := int64(o.othersInFlightMax); k >= 0 && k*largest[r] < slack {
			slack = k * largest[r]
		}
		after[r] += slack
	}
	return after
}

// replay holds every applied capture's lines to the allocation rule
// exactly, as the crash audit does with its own ops: possible only when
// the run applied its ops in op order, one at a time (one worker, not
// pipelined: Outcomes.othersInFlightMax is 0), so that the group each
// capture met is the one the ops before it left. The rule is the
// reference model's (workload.Model), which shares no code with the
// engine or with inventory.Allocate, which the SQL adapters use. A group
// is followed until an op of unknown outcome (which may have been applied,
// and even late), a capture with malformed lines (already a violation), or
// its first wrong capture: past those its state is no longer known.
func replay(c *checker, o *Outcomes, badLines []bool) {
	if o.othersInFlightMax != 0 {
		return
	}
	p := o.plan
	w := p.w
	m, err := workload.NewModel(w.Initial)
	if err != nil {
		c.addf("the allocation rule could not be replayed: %v", err)
		return
	}
	lost := make([]bool, len(p.groups)) // the group's state is no longer known
	for i := range w.Ops {
		g := p.opGroup[i]
		if lost[g] || badLines[g] {
			continue
		}
		op := &w.Ops[i]
		switch o.ops[i].status {
		case OpNotRun, OpRefused:
			continue
		case OpUnknown:
			lost[g] = true
			continue
		}
		if op.Kind == inventory.KindRelease {
			if _, ok := m.Release(op.Key, op.N); !ok {
				lost[g] = true // past the model's range: not a workload's
			}
			continue
		}
		held := m.Available(op.Group())
		want, _, ok := m.Capture(op.Group(), op.N)
		switch got := o.Lines(i); {
		case !ok:
			c.addf("op %d: capture of %d from group %v was acknowledged while the ops before it left the group %d units: oversold", i+1, op.N, op.Group(), held)
			lost[g] = true
		case !slices.Equal(got, want):
			c.addf("op %d: capture of %d from group %v returned lines %v, but the allocation rule on the group as the ops before it left it gives %v: it took from the wrong rows", i+1, op.N, op.Group(), got, want)
			lost[g] = true
		}
	}
}

// unknownSumsMax bounds the distinct totals unknownSums tracks for one
// group, and unknownSumsWork the steps it takes over a whole check (a run
// whose every op failed, on an op file with large and varied n, would
// otherwise cost the square of its ops); past either, a group's total is
// held to the range only.
const (
	unknownSumsMax  = 4096
	unknownSumsWork = 1 << 24
)

// unknownSums returns every change to a group's total that some set of
// ops (those of unknown outcome), each applied whole or not at all, makes:
// releases add their n, captures take theirs. Nil when there are more than
// unknownSumsMax of them, or when *work, the steps left, runs out.
func unknownSums(w *workload.Workload, ops []int32, work *int) map[int64]struct{} {
	sums := map[int64]struct{}{0: {}}
	var add []int64
	for _, i := range ops {
		if *work -= len(sums); *work < 0 {
			return nil
		}
		d := w.Ops[i].N
		if w.Ops[i].Kind == inventory.KindCapture {
			d = -d
		}
		add = add[:0]
		for s := range sums {
			if _, ok := sums[s+d]; !ok {
				add = append(add, s+d)
			}
		}
		for _, s := range add {
			sums[s] = struct{}{}
		}
		if len(sums) > unknownSumsMax {
			return nil
		}
	}
	return sums
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
