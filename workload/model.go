package workload

import (
	"fmt"
	"math"
	"slices"

	"allot/inventory"
)

// Model is the reference model of the inventory: plain maps and the
// allocation rule written the most direct way, with no index, no 128-bit
// totals and no shared code with inventory.State. It is slow and obviously
// right, which is its job: generated workloads are verified against it, and
// tests compare the state machine and the stores with it.
//
// Counts are int64; the model is meant for generated workloads, whose
// counts stay far below inventory.CountMax, and it reports an error rather
// than overflow.
type Model struct {
	counts     map[inventory.RowKey]int64
	warehouses map[inventory.GroupKey][]string // sorted ascending
}

// NewModel returns a model holding rows. Duplicate keys are an error.
func NewModel(rows []inventory.Row) (*Model, error) {
	m := &Model{
		counts:     make(map[inventory.RowKey]int64, len(rows)),
		warehouses: make(map[inventory.GroupKey][]string),
	}
	for _, r := range rows {
		if _, dup := m.counts[r.Key]; dup {
			return nil, fmt.Errorf("workload: row %v appears twice", r.Key)
		}
		if r.Count < 0 {
			return nil, fmt.Errorf("workload: row %v has negative count %d", r.Key, r.Count)
		}
		m.counts[r.Key] = r.Count
		g := r.Key.Group()
		m.warehouses[g] = append(m.warehouses[g], r.Key.Warehouse)
	}
	for _, ws := range m.warehouses {
		slices.Sort(ws)
	}
	return m, nil
}

// Available returns the total of group g.
//
// The sum saturates at math.MaxInt64, as inventory.Allocate's does: rows
// hold up to inventory.CountMax each, and a group of several such rows
// would wrap a plain sum negative, refusing a capture the store rightly
// applied.
func (m *Model) Available(g inventory.GroupKey) int64 {
	var total int64
	for _, w := range m.warehouses[g] {
		total = min(total, math.MaxInt64-m.counts[g.Row(w)]) + m.counts[g.Row(w)]
	}
	return total
}

// Capture takes n units of g by the domain's rule: warehouses in ascending
// byte order, min(count, remaining) from each. ok is false, and nothing
// changes, when the group holds fewer than n units; available is then the
// group's total.
func (m *Model) Capture(g inventory.GroupKey, n int64) (lines []inventory.Line, available int64, ok bool) {
	available = m.Available(g)
	if n < 1 || available < n {
		return nil, available, false
	}
	remaining := n
	for _, w := range m.warehouses[g] {
		k := g.Row(w)
		take := min(m.counts[k], remaining)
		if take == 0 {
			continue
		}
		m.counts[k] -= take
		remaining -= take
		lines = append(lines, inventory.Line{Warehouse: w, Count: take})
		if remaining == 0 {
			break
		}
	}
	return lines, available, true
}

// Release adds n units to row k and returns its new count; ok is false for
// an unknown row or n < 1.
func (m *Model) Release(k inventory.RowKey, n int64) (count int64, ok bool) {
	c, found := m.counts[k]
	if !found || n < 1 || c > inventory.CountMax-n {
		return 0, false
	}
	m.counts[k] = c + n
	return c + n, true
}

// Apply runs op and returns an error when it does not succeed.
func (m *Model) Apply(op *Op) error {
	switch op.Kind {
	case inventory.KindCapture:
		if _, avail, ok := m.Capture(op.Group(), op.N); !ok {
			return fmt.Errorf("capture of %d from group %v failed: %d available", op.N, op.Group(), avail)
		}
	case inventory.KindRelease:
		if _, ok := m.Release(op.Key, op.N); !ok {
			// Release refuses for one of three reasons; name the one.
			c, found := m.counts[op.Key]
			switch {
			case !found:
				return fmt.Errorf("release of %d to row %v failed: unknown row", op.N, op.Key)
			case op.N < 1:
				return fmt.Errorf("release of %d to row %v failed: the quantity must be at least 1", op.N, op.Key)
			default:
				return fmt.Errorf("release of %d to row %v failed: its count %d would pass the largest, %d", op.N, op.Key, c, int64(inventory.CountMax))
			}
		}
	default:
		return fmt.Errorf("op of kind %v is neither a capture nor a release", op.Kind)
	}
	return nil
}

// Count returns row k's count and whether the row exists.
func (m *Model) Count(k inventory.RowKey) (int64, bool) {
	c, ok := m.counts[k]
	return c, ok
}

// Len returns the number of rows.
func (m *Model) Len() int { return len(m.counts) }

// Verify replays w's ops in order on a model of its initial rows and
// returns the final model, or an error naming the first op that did not
// succeed and its line in the op file Write makes of w (the file it was
// read from). A generated workload always verifies; an op file might not.
func Verify(w *Workload) (*Model, error) {
	m, err := NewModel(w.Initial)
	if err != nil {
		return nil, err
	}
	for i := range w.Ops {
		if err := m.Apply(&w.Ops[i]); err != nil {
			// The header, the stocked rows, then the ops, a line each.
			return nil, fmt.Errorf("workload: op %d (line %d of the op file): %w", i+1, 1+len(w.Initial)+i+1, err)
		}
	}
	return m, nil
}
