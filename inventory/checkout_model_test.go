package inventory

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// checkoutModel is a dumb reference for holds, orders, idempotency keys and
// time: maps and sorting, no indexes, no heap, no arena.
type checkoutModel struct {
	now, retention int64
	rows           map[RowKey][2]int64 // count, price
	holds          map[string]*modelHold
	keys           map[string]modelKey
}

type modelHold struct {
	state               HoldState
	expiresAt, finished int64
	lines               string // the request lines, printed
	alloc               []Allocation
}

type modelKey struct {
	request string
	stamp   int64
	res     Result
}

func newCheckoutModel(retention int64) *checkoutModel {
	return &checkoutModel{retention: retention, rows: map[RowKey][2]int64{}, holds: map[string]*modelHold{}, keys: map[string]modelKey{}}
}

func (m *checkoutModel) groupRows(g GroupKey) []RowKey {
	var ks []RowKey
	for k := range m.rows {
		if k.Group() == g {
			ks = append(ks, k)
		}
	}
	slices.SortFunc(ks, func(a, b RowKey) int { return CompareRowKeys(a, b) })
	return ks
}

func (m *checkoutModel) total(g GroupKey) int64 {
	var t int64
	for _, k := range m.groupRows(g) {
		t = min(t, math.MaxInt64-m.rows[k][0]) + m.rows[k][0] // saturated
	}
	return t
}

// take allocates lines (summed per group, in first-line order).
func (m *checkoutModel) take(lines []Demand) ([]Allocation, Result, bool) {
	type gd struct {
		g    GroupKey
		n    int64
		line int
	}
	var gs []gd
	for i, l := range lines {
		j := slices.IndexFunc(gs, func(x gd) bool { return x.g == l.Group })
		if j < 0 {
			gs = append(gs, gd{g: l.Group, line: i})
			j = len(gs) - 1
		}
		gs[j].n += l.N
	}
	for _, x := range gs {
		if t := m.total(x.g); t < x.n {
			return nil, Result{Code: CodeInsufficient, ShortLine: x.line, Available: t}, false
		}
	}
	var alloc []Allocation
	for _, x := range gs {
		left := x.n
		for _, k := range m.groupRows(x.g) {
			r := m.rows[k]
			t := min(r[0], left)
			if t > 0 {
				r[0] -= t
				m.rows[k] = r
				left -= t
				alloc = append(alloc, Allocation{Row: k, Count: t})
			}
		}
	}
	return alloc, Result{}, true
}

func (m *checkoutModel) give(alloc []Allocation) {
	for _, a := range alloc {
		r := m.rows[a.Row]
		r[0] = min(r[0], CountMax-a.Count) + a.Count // capped at CountMax
		m.rows[a.Row] = r
	}
}

func (m *checkoutModel) hold(id string) *modelHold {
	h := m.holds[id]
	if h == nil || (h.state != HoldHeld && h.finished+m.retention <= m.now) {
		return nil
	}
	return h
}

func (m *checkoutModel) finish(h *modelHold, st HoldState) {
	if st != HoldConfirmed {
		m.give(h.alloc)
	}
	h.state, h.finished = st, m.now
}

func (m *checkoutModel) apply(op Op) Result {
	if op.Check() != "" {
		return Result{Code: CodeInvalid}
	}
	if op.IdempotencyKey != "" {
		key := op.IdempotencyKey
		op.IdempotencyKey = ""
		req := fmt.Sprintf("%+v", op)
		if k, ok := m.keys[key]; ok && k.stamp+m.retention > m.now {
			if k.request != req {
				return Result{Code: CodeMismatch}
			}
			r := k.res
			r.Repeat, r.Changed = true, false
			return r
		}
		r := m.apply(op)
		if r.Code != CodeInvalid && r.Code != CodeOverflow {
			m.keys[key] = modelKey{request: req, stamp: m.now, res: r}
			r.Changed = true
		}
		return r
	}
	switch op.Kind {
	case KindStock:
		m.rows[op.Key] = [2]int64{op.N, op.Price}
		return Result{Count: op.N, Price: op.Price, Changed: true}
	case KindRelease:
		r, ok := m.rows[op.Key]
		if !ok {
			return Result{Code: CodeNotFound}
		}
		if r[0] > CountMax-op.N {
			return Result{Code: CodeOverflow}
		}
		r[0] += op.N
		m.rows[op.Key] = r
		return Result{Count: r[0], Changed: true}
	case KindCapture:
		alloc, res, ok := m.take([]Demand{{Group: op.Key.Group(), N: op.N}})
		if !ok {
			return Result{Code: CodeInsufficient, Available: res.Available}
		}
		var lines []Line
		for _, a := range alloc {
			lines = append(lines, Line{Warehouse: a.Row.Warehouse, Count: a.Count})
		}
		return Result{Lines: lines, Changed: true}
	case KindOrder:
		alloc, res, ok := m.take(op.Lines)
		if !ok {
			return res
		}
		return Result{Allocations: alloc, Changed: true}
	case KindHold:
		req := fmt.Sprint(op.Lines)
		if h := m.hold(op.Hold); h != nil {
			if h.lines != req {
				return Result{Code: CodeMismatch}
			}
			return Result{Repeat: true, ExpiresAt: h.expiresAt, Allocations: h.alloc}
		}
		alloc, res, ok := m.take(op.Lines)
		if !ok {
			return res
		}
		m.holds[op.Hold] = &modelHold{state: HoldHeld, expiresAt: m.now + op.TTL, lines: req, alloc: alloc}
		return Result{ExpiresAt: m.now + op.TTL, Allocations: alloc, Changed: true}
	case KindConfirm, KindCancel:
		h := m.hold(op.Hold)
		if h == nil {
			return Result{Code: CodeNotFound}
		}
		if h.state == HoldHeld && h.expiresAt <= m.now {
			m.finish(h, HoldExpired)
			if op.Kind == KindConfirm {
				return Result{Code: CodeExpired, Changed: true}
			}
			return Result{Changed: true}
		}
		switch {
		case h.state == HoldHeld && op.Kind == KindConfirm:
			m.finish(h, HoldConfirmed)
			return Result{Changed: true}
		case h.state == HoldHeld:
			m.finish(h, HoldCancelled)
			return Result{Changed: true}
		case op.Kind == KindConfirm && h.state == HoldCancelled:
			return Result{Code: CodeCancelled}
		case op.Kind == KindConfirm && h.state == HoldExpired:
			return Result{Code: CodeExpired}
		case op.Kind == KindCancel && h.state == HoldConfirmed:
			return Result{Code: CodeConfirmed}
		}
		return Result{Repeat: true}
	case KindHoldGet:
		h := m.hold(op.Hold)
		if h == nil {
			return Result{Code: CodeNotFound}
		}
		return Result{State: h.state, ExpiresAt: h.expiresAt, Allocations: h.alloc}
	}
	panic("model: unexpected kind " + op.Kind.String())
}

// expireDue expires every held hold past its deadline.
func (m *checkoutModel) expireDue() int {
	n := 0
	for _, h := range m.holds {
		if h.state == HoldHeld && h.expiresAt <= m.now {
			m.finish(h, HoldExpired)
			n++
		}
	}
	return n
}

func normalize(r Result) Result {
	r.Detail = ""
	if len(r.Lines) == 0 {
		r.Lines = nil
	}
	if len(r.Allocations) == 0 {
		r.Allocations = nil
	}
	return r
}

// TestCheckoutAgainstModel drives the state machine and the reference model
// with random ops of every kind, holds and time, and compares every result
// and the whole state (rows and every hold) after every step.
func TestCheckoutAgainstModel(t *testing.T) {
	for seed := uint64(1); seed <= 30; seed++ {
		rng := rand.New(rand.NewPCG(seed, 9))
		const retention = 400
		s, m := NewState(), newCheckoutModel(retention)
		s.SetRetention(retention)
		s.SetTime(1000)
		m.now = 1000
		skus := []string{"a", "b"}
		whs := []string{"w1", "w2", "w3"}
		holdIDs := []string{"h1", "h2", "h3", "h4", "h5", "h6"}
		keys := []string{"k1", "k2", "k3", "k4"}
		group := func() GroupKey { return GroupKey{SKU: skus[rng.IntN(2)], Condition: "new", Source: "s"} }
		demand := func() []Demand {
			ls := make([]Demand, 1+rng.IntN(3))
			for i := range ls {
				ls[i] = Demand{Group: group(), N: 1 + rng.Int64N(4)}
			}
			return ls
		}
		for i := 0; i < 3000; i++ {
			var op Op
			switch rng.IntN(12) {
			case 0:
				op = Stock(group().Row(whs[rng.IntN(3)]), rng.Int64N(8), 100)
			case 1:
				op = Release(group().Row(whs[rng.IntN(3)]), 1+rng.Int64N(3))
			case 2:
				op = Capture(group(), 1+rng.Int64N(4))
			case 3, 4:
				op = Hold(holdIDs[rng.IntN(len(holdIDs))], 1+rng.Int64N(300), demand())
			case 5:
				op = Confirm(holdIDs[rng.IntN(len(holdIDs))])
			case 6:
				op = Cancel(holdIDs[rng.IntN(len(holdIDs))])
			case 7:
				op = Order(demand())
			case 8:
				op = HoldGet(holdIDs[rng.IntN(len(holdIDs))])
			case 9:
				op = Hold(holdIDs[rng.IntN(len(holdIDs))], 0, demand()) // invalid ttl
			default:
				// Time passes; the writer expires what is due.
				dt := rng.Int64N(120)
				s.SetTime(s.Now() + dt)
				m.now += dt
				n := 0
				for {
					id, ok := s.NextDue()
					if !ok {
						break
					}
					e := Expire(id)
					if r := s.Apply(&e, nil); !r.Changed {
						t.Fatalf("seed %d: expire %s: %+v", seed, id, r)
					}
					n++
				}
				if want := m.expireDue(); n != want {
					t.Fatalf("seed %d step %d: expired %d holds, model %d", seed, i, n, want)
				}
				s.Collect()
				continue
			}
			if rng.IntN(3) == 0 && op.Kind.Keyed() {
				op.IdempotencyKey = keys[rng.IntN(len(keys))]
			}
			got, want := normalize(s.Apply(&op, nil)), normalize(m.apply(op))
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("seed %d step %d %s %+v:\n got %+v\nwant %+v", seed, i, op.Kind, op, got, want)
			}
			if err := s.CheckInvariants(); err != nil {
				t.Fatalf("seed %d step %d: %v", seed, i, err)
			}
			for _, r := range s.Rows() {
				if mr := m.rows[r.Key]; mr != [2]int64{r.Count, r.Price} {
					t.Fatalf("seed %d step %d row %v: state %d, model %v", seed, i, r.Key, r.Count, mr)
				}
			}
			for _, id := range holdIDs {
				g := HoldGet(id)
				if got, want := normalize(s.Apply(&g, nil)), normalize(m.apply(g)); !reflect.DeepEqual(got, want) {
					t.Fatalf("seed %d step %d hold %s: got %+v, model %+v", seed, i, id, got, want)
				}
			}
		}
		// A clone (what a snapshot keeps) answers the same.
		c := s.Clone()
		for _, id := range holdIDs {
			g := HoldGet(id)
			if a, b := normalize(s.Apply(&g, nil)), normalize(c.Apply(&g, nil)); !reflect.DeepEqual(a, b) {
				t.Fatalf("seed %d: clone answers %+v for %s, state %+v", seed, b, id, a)
			}
		}
	}
}
