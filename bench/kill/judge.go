package kill

import (
	"sort"

	"allot/inventory"
)

// judge compares the rows read back after the restart with every worker's
// ledger and adds what it finds to res.
func (p *roundPlan) judge(rows []inventory.Row, res *Result) {
	got := make(map[inventory.RowKey]int64, len(rows))
	for _, r := range rows {
		got[r.Key] = r.Count
	}
	for _, w := range p.workers {
		for _, b := range w.badReplies {
			res.Corrupt++
			res.example("reply: %s", b)
		}
		for g := range w.groups {
			judgeGroup(w.groups[g], &w.captures[g], got, res)
		}
		for r := range w.released {
			judgeRow(w.released[r], &w.releases[r], got, res)
		}
	}
}

// count tallies a sequence's ops into Acked and InFlight.
func count(seq *sequence, res *Result) {
	for _, st := range seq.steps {
		switch st.state {
		case opAcked, opRefused:
			res.Acked++
		case opInFlight:
			res.InFlight++
		}
	}
}

// prefix finds k with cum[k] == v; cum is strictly increasing. When v
// falls between two prefixes it returns the lower one and between = true;
// outside them all, k = -1.
func prefix(cum []int64, v int64) (k int, between bool) {
	i := sort.Search(len(cum), func(i int) bool { return cum[i] >= v })
	switch {
	case i < len(cum) && cum[i] == v:
		return i, false
	case i == 0 || i == len(cum):
		return -1, false
	}
	return i - 1, true
}

// settle adds the verdict of a sequence whose first k candidate ops were
// found applied, acked of them acknowledged.
func settle(k, acked int, res *Result) {
	if k < acked {
		res.LostAcked += int64(acked - k)
	} else {
		res.AppliedUnacked += int64(k - acked)
	}
}

func judgeGroup(g inventory.GroupKey, seq *sequence, got map[inventory.RowKey]int64, res *Result) {
	count(seq, res)
	cum, acked := seq.candidates()
	var counts [groupWarehouses]int64
	present := 0
	for i := range counts {
		c, ok := got[g.Row(warehouse(i))]
		if ok {
			present++
		}
		counts[i] = c
		if c < 0 {
			res.Oversold++
			res.example("oversold: row %v holds %d", g.Row(warehouse(i)), c)
		}
	}
	switch present {
	case 0:
		res.RowsMissing += groupWarehouses
		res.LostAcked += int64(acked)
		return
	case groupWarehouses:
	default:
		res.RowsMissing += int64(groupWarehouses - present)
		res.Corrupt++
		res.example("corrupt: group %v kept %d of its %d rows", g, present, groupWarehouses)
		return
	}
	var total int64
	for _, c := range counts {
		total += c
	}
	taken := groupUnits - total
	if taken > groupUnits {
		res.Oversold++
		res.example("oversold: group %v gave %d units of %d", g, taken, groupUnits)
		return
	}
	k, between := prefix(cum, taken)
	switch {
	case k < 0:
		res.Corrupt++
		res.example("corrupt: group %v has %d units taken; its captures took %v", g, taken, cum)
	case between:
		res.HalfApplied++
		res.example("half-applied: group %v has %d units taken, between captures %d (%d) and %d (%d)", g, taken, k, cum[k], k+1, cum[k+1])
		if k+1 < acked {
			res.LostAcked += int64(acked - k - 1)
		}
	default:
		if counts != groupCounts(taken) {
			res.Corrupt++
			res.example("corrupt: group %v holds %v, the allocation rule after %d taken gives %v", g, counts, taken, groupCounts(taken))
			return
		}
		settle(k, acked, res)
	}
}

func judgeRow(key inventory.RowKey, seq *sequence, got map[inventory.RowKey]int64, res *Result) {
	count(seq, res)
	cum, acked := seq.candidates()
	c, ok := got[key]
	if !ok {
		res.RowsMissing++
		res.LostAcked += int64(acked)
		return
	}
	k, between := prefix(cum, c)
	if k < 0 || between {
		res.Corrupt++
		res.example("corrupt: row %v holds %d; its releases add up to %v", key, c, cum)
		return
	}
	settle(k, acked, res)
}
