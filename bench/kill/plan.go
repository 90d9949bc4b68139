package kill

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"

	"allot/inventory"
	"allot/store"
)

// The shape of a round's rows. A capture group has groupWarehouses rows of
// groupRowCount units: captures of 1..3 units then often span two rows
// (about one in four), which is where a store without atomic multi-row
// writes would leave half a capture.
const (
	groupWarehouses = 16
	groupRowCount   = 8
	groupUnits      = groupWarehouses * groupRowCount
	// releaseRowsPerWorker are the rows a worker releases into.
	releaseRowsPerWorker = 32
	quantityMax          = 3
	condition            = "new"
	source               = "kill"
	price                = 1000
)

// warehouse returns the id of warehouse i, in allocation (byte) order.
func warehouse(i int) string { return fmt.Sprintf("w%02d", i) }

// opState is what the client learned of one op.
type opState uint8

const (
	// opAcked: the store replied CodeOK.
	opAcked opState = iota
	// opRefused: the store replied with another code; nothing applied.
	opRefused
	// opInFlight: the call failed (the kill); applied or not, unknown.
	opInFlight
)

// step is one op on a group or a row, in the order the worker sent it.
type step struct {
	n     int64
	state opState
}

// sequence is the ops on one group (captures) or one row (releases).
type sequence struct {
	steps []step
}

// candidates returns the cumulative units of each prefix of the ops that
// may have been applied (acked and in-flight, refused left out), and the
// number of acked ones among them (they come first: a worker stops at its
// first failed call).
func (s *sequence) candidates() (cum []int64, acked int) {
	cum = []int64{0}
	for _, st := range s.steps {
		if st.state == opRefused {
			continue
		}
		if st.state == opAcked {
			acked++
		}
		cum = append(cum, cum[len(cum)-1]+st.n)
	}
	return cum, acked
}

// roundPlan is the rows and workers of one round.
type roundPlan struct {
	round   int
	workers []*worker
}

// worker owns its groups and rows; its rng decides its ops.
type worker struct {
	id       int
	rng      *rand.Rand
	opsMax   int
	groups   []inventory.GroupKey
	captures []sequence // per group
	released []inventory.RowKey
	releases []sequence // per release row
	// current is the group captures take from; left its units as the
	// client knows them (acked captures only).
	current int
	left    int64
	// badReplies are replies that contradict the ops before them.
	badReplies []string
}

func newRoundPlan(run string, round, workers, opsMax int, seed uint64) *roundPlan {
	p := &roundPlan{round: round}
	perWorker := opsMax / workers
	// Half the ops are captures, on average, of two units; a group gives
	// up to quantityMax-1 units to waste when it runs short. Twice that
	// many groups, plus one, so that a worker rarely runs out.
	groups := perWorker*quantityMax/groupUnits + 1
	for w := 0; w < workers; w++ {
		wk := &worker{id: w, rng: rand.New(rand.NewPCG(seed, uint64(w))), opsMax: perWorker, left: groupUnits}
		for g := 0; g < groups; g++ {
			wk.groups = append(wk.groups, inventory.GroupKey{SKU: fmt.Sprintf("%sr%dw%dg%d", run, round, w, g), Condition: condition, Source: source})
		}
		wk.captures = make([]sequence, groups)
		for r := 0; r < releaseRowsPerWorker; r++ {
			wk.released = append(wk.released, inventory.RowKey{SKU: fmt.Sprintf("%sr%dw%dr%d", run, round, w, r), Warehouse: warehouse(0), Condition: condition, Source: source})
		}
		wk.releases = make([]sequence, releaseRowsPerWorker)
		p.workers = append(p.workers, wk)
	}
	return p
}

// rows is what the round loads.
func (p *roundPlan) rows() []inventory.Row {
	var rows []inventory.Row
	for _, w := range p.workers {
		for _, g := range w.groups {
			for i := 0; i < groupWarehouses; i++ {
				rows = append(rows, inventory.Row{Key: g.Row(warehouse(i)), Count: groupRowCount, Price: price})
			}
		}
		for _, k := range w.released {
			rows = append(rows, inventory.Row{Key: k, Count: 0, Price: price})
		}
	}
	return rows
}

// run sends ops one at a time until opsMax, the first failed call, or
// stop (set after the kill). It reports whether it sent all opsMax.
func (w *worker) run(ctx context.Context, s store.Session, stop *atomic.Bool) (all bool) {
	lines := make([]inventory.Line, 0, groupWarehouses)
	for i := 0; i < w.opsMax && !stop.Load(); i++ {
		n := 1 + w.rng.Int64N(quantityMax)
		if w.rng.IntN(2) == 0 && w.current < len(w.groups) {
			if w.left < n {
				w.current++
				w.left = groupUnits
				if w.current == len(w.groups) {
					continue
				}
			}
			g := w.current
			seq := &w.captures[g]
			seq.steps = append(seq.steps, step{n: n, state: opInFlight})
			res, err := s.Capture(ctx, w.groups[g], n, lines[:0])
			if err != nil {
				return false
			}
			if res.Code != inventory.CodeOK {
				seq.steps[len(seq.steps)-1].state = opRefused
				w.badReplies = append(w.badReplies, fmt.Sprintf("capture %d of %v with %d units left: %v %s", n, w.groups[g], w.left, res.Code, res.Detail))
				continue
			}
			seq.steps[len(seq.steps)-1].state = opAcked
			w.checkLines(g, n, res.Lines)
			w.left -= n
			continue
		}
		r := w.rng.IntN(len(w.released))
		seq := &w.releases[r]
		seq.steps = append(seq.steps, step{n: n, state: opInFlight})
		res, err := s.Release(ctx, w.released[r], n)
		if err != nil {
			return false
		}
		if res.Code != inventory.CodeOK {
			seq.steps[len(seq.steps)-1].state = opRefused
			w.badReplies = append(w.badReplies, fmt.Sprintf("release %d to %v: %v %s", n, w.released[r], res.Code, res.Detail))
			continue
		}
		seq.steps[len(seq.steps)-1].state = opAcked
		if cum, _ := seq.candidates(); res.Count != cum[len(cum)-1] {
			w.badReplies = append(w.badReplies, fmt.Sprintf("release %d to %v replied count %d, the ops before it make %d", n, w.released[r], res.Count, cum[len(cum)-1]))
		}
	}
	return !stop.Load()
}

// checkLines compares a capture's reply with the allocation rule applied
// to the acked captures before it.
func (w *worker) checkLines(g int, n int64, got []inventory.Line) {
	taken := int64(groupUnits) - w.left
	want := allocation(taken, n)
	ok := len(got) == len(want)
	for i := 0; ok && i < len(got); i++ {
		ok = got[i] == want[i]
	}
	if !ok {
		w.badReplies = append(w.badReplies, fmt.Sprintf("capture %d of %v after %d taken replied %v, the allocation rule gives %v", n, w.groups[g], taken, got, want))
	}
}

// allocation is the domain rule on a capture group: n units taken after
// taken units, warehouses in ascending order.
func allocation(taken, n int64) []inventory.Line {
	var out []inventory.Line
	for i := 0; i < groupWarehouses && n > 0; i++ {
		left := groupRowCount - min(groupRowCount, max(0, taken-int64(i)*groupRowCount))
		if left == 0 {
			continue
		}
		k := min(left, n)
		out = append(out, inventory.Line{Warehouse: warehouse(i), Count: k})
		n -= k
		taken += k
	}
	return out
}

// groupCounts is what a group's rows hold after taken units were captured.
func groupCounts(taken int64) [groupWarehouses]int64 {
	var c [groupWarehouses]int64
	for i := range c {
		c[i] = groupRowCount - min(groupRowCount, max(0, taken-int64(i)*groupRowCount))
	}
	return c
}
