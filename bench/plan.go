package bench

import (
	"fmt"
	"slices"

	"allot/inventory"
	"allot/workload"
)

// Plan is a workload indexed for the runner and the checker: every row and
// group gets a number, and every op the numbers it touches, so that the hot
// path and the check do array lookups, not map lookups. Building it costs a
// map lookup per op, paid once before the clock starts; a Plan can be run
// against any number of stores.
type Plan struct {
	w        *workload.Workload
	rowIndex map[inventory.RowKey]int32
	groups   []planGroup
	rowGroup []int32 // per row of w.Initial
	opGroup  []int32 // per op
	opRow    []int32 // per op: the row of a release, -1 for a capture
}

// planGroup is one group: its warehouses in ascending byte order (the
// allocation order) and the matching rows.
type planGroup struct {
	key        inventory.GroupKey
	warehouses []string
	rows       []int32
}

// NewPlan indexes w. It fails when an op names a row or group the workload
// does not load, or when a row is loaded twice: such a workload cannot be
// checked.
func NewPlan(w *workload.Workload) (*Plan, error) {
	p := &Plan{
		w:        w,
		rowIndex: make(map[inventory.RowKey]int32, len(w.Initial)),
		rowGroup: make([]int32, len(w.Initial)),
		opGroup:  make([]int32, len(w.Ops)),
		opRow:    make([]int32, len(w.Ops)),
	}
	groupIndex := make(map[inventory.GroupKey]int32)
	for i, r := range w.Initial {
		if _, dup := p.rowIndex[r.Key]; dup {
			return nil, fmt.Errorf("bench: row %v is loaded twice", r.Key)
		}
		p.rowIndex[r.Key] = int32(i)
		g, ok := groupIndex[r.Key.Group()]
		if !ok {
			g = int32(len(p.groups))
			groupIndex[r.Key.Group()] = g
			p.groups = append(p.groups, planGroup{key: r.Key.Group()})
		}
		p.rowGroup[i] = g
		p.groups[g].rows = append(p.groups[g].rows, int32(i))
	}
	for gi := range p.groups {
		g := &p.groups[gi]
		slices.SortFunc(g.rows, func(a, b int32) int {
			return inventory.CompareRowKeys(w.Initial[a].Key, w.Initial[b].Key)
		})
		for _, r := range g.rows {
			g.warehouses = append(g.warehouses, w.Initial[r].Key.Warehouse)
		}
	}
	for i := range w.Ops {
		op := &w.Ops[i]
		switch op.Kind {
		case inventory.KindCapture:
			g, ok := groupIndex[op.Group()]
			if !ok {
				return nil, fmt.Errorf("bench: op %d captures from group %v, which no loaded row belongs to", i+1, op.Group())
			}
			p.opGroup[i], p.opRow[i] = g, -1
		case inventory.KindRelease:
			r, ok := p.rowIndex[op.Key]
			if !ok {
				return nil, fmt.Errorf("bench: op %d releases to row %v, which is not loaded", i+1, op.Key)
			}
			p.opGroup[i], p.opRow[i] = p.rowGroup[r], r
		default:
			return nil, fmt.Errorf("bench: op %d has kind %v, neither capture nor release", i+1, op.Kind)
		}
	}
	return p, nil
}

// Workload returns the workload the plan indexes.
func (p *Plan) Workload() *workload.Workload { return p.w }

// warehouseIndex returns the position of warehouse w in group g, or -1.
// Groups hold a handful of warehouses, so a scan beats a map.
func (p *Plan) warehouseIndex(g int32, w string) int {
	for i, x := range p.groups[g].warehouses {
		if x == w {
			return i
		}
	}
	return -1
}
