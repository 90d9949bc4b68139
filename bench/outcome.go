package bench

import (
	"fmt"
	"math"
	"slices"
	"sync"

	"allot/inventory"
	"allot/workload"
)

// OpStatus is what became of one op of a run.
type OpStatus uint8

const (
	// OpNotRun: the op was never issued (a --duration bound or a cancel
	// stopped the run first).
	OpNotRun OpStatus = iota
	// OpApplied: the store acknowledged the op.
	OpApplied
	// OpRefused: the store answered with a refusal (insufficient stock
	// after every retry, unknown row, invalid, overflow): by the contract
	// nothing changed.
	OpRefused
	// OpUnknown: the session returned an error, so the op may or may not
	// have been applied.
	OpUnknown
)

// verdict is what the runner does with an op after one attempt.
type verdict uint8

const (
	verdictApplied verdict = iota // record it applied
	verdictRetry                  // a capture short of stock: try again after RetryDelay
	verdictFailed                 // record the status classify returned, with its message
)

// classify judges one attempt of op i (attempts retries so far) from the
// store's reply res or its error err. It is the one place that reads a
// reply: both runners, one call at a time and pipelined, ask it. An error
// leaves the op's outcome unknown (it may have been applied); a refusal
// changed nothing by the contract; a capture short of stock is retried up
// to retryMax times, because concurrency may have reordered it after the
// release that makes it succeed.
func classify(i int, op *workload.Op, res *inventory.Result, err error, attempts, retryMax int) (verdict, OpStatus, string) {
	switch {
	case err != nil:
		return verdictFailed, OpUnknown, err.Error()
	case res.Code == inventory.CodeOK:
		return verdictApplied, OpApplied, ""
	case res.Code == inventory.CodeInsufficient && op.Kind == inventory.KindCapture && attempts < retryMax:
		return verdictRetry, OpNotRun, ""
	case res.Code == inventory.CodeInsufficient && op.Kind == inventory.KindCapture:
		return verdictFailed, OpRefused, fmt.Sprintf("op %d: capture of %d from %v: still insufficient (%d available) after %d retries", i+1, op.N, op.Group(), res.Available, attempts)
	}
	return verdictFailed, OpRefused, fmt.Sprintf("op %d: %v of %d to %v: %v %s", i+1, op.Kind, op.N, op.Key, res.Code, res.Detail)
}

// linesInline is how many capture lines an outcome holds without spilling:
// the generated workloads have 3 or 4 warehouses per group.
const linesInline = 4

// spilled marks an outcome whose lines are in Outcomes.spill.
const spilled = math.MaxUint8

// outcome is one op's result, packed in 24 bytes so that a million of them
// fit in a few cache-friendly megabytes and recording one allocates
// nothing. A capture's lines are held as (warehouse position in the group,
// count); lines that do not fit that form (too many, a warehouse outside
// the group, a count beyond 32 bits or not positive) are kept whole in the
// spill map, which only a wrong store ever fills.
type outcome struct {
	status OpStatus
	lines  uint8
	wh     [linesInline]uint8
	count  [linesInline]uint32
}

// Outcomes records what became of every op of a run. Record may be called
// from many goroutines at once for different ops.
type Outcomes struct {
	plan *Plan
	ops  []outcome

	spillMu sync.Mutex
	spill   map[int][]inventory.Line

	// othersInFlightMax bounds the ops of lower index that can still have
	// been in flight when any op was taken (so that they may be applied
	// after it): -1 when nothing bounds them. The check of the allocation
	// rule uses it (releasesAfter).
	othersInFlightMax int
}

// NewOutcomes returns a record with every op not run.
func NewOutcomes(p *Plan) *Outcomes {
	return &Outcomes{plan: p, ops: make([]outcome, len(p.w.Ops)), spill: make(map[int][]inventory.Line), othersInFlightMax: -1}
}

// Record sets the outcome of op i. lines are a capture's lines when status
// is OpApplied; they are copied, not kept.
func (o *Outcomes) Record(i int, status OpStatus, lines []inventory.Line) {
	rec := &o.ops[i]
	rec.status = status
	rec.lines = 0
	if status != OpApplied || o.plan.opRow[i] >= 0 {
		return
	}
	if len(lines) > linesInline {
		o.spillLines(i, lines)
		return
	}
	g := o.plan.opGroup[i]
	for j, l := range lines {
		w := o.plan.warehouseIndex(g, l.Warehouse)
		if w < 0 || w >= spilled || l.Count <= 0 || l.Count > math.MaxUint32 {
			o.spillLines(i, lines)
			return
		}
		rec.wh[j] = uint8(w)
		rec.count[j] = uint32(l.Count)
	}
	rec.lines = uint8(len(lines))
}

func (o *Outcomes) spillLines(i int, lines []inventory.Line) {
	o.ops[i].lines = spilled
	o.spillMu.Lock()
	o.spill[i] = slices.Clone(lines)
	o.spillMu.Unlock()
}

// Status returns the status of op i.
func (o *Outcomes) Status(i int) OpStatus { return o.ops[i].status }

// Lines returns the lines recorded for op i, rebuilt from the packed form.
func (o *Outcomes) Lines(i int) []inventory.Line {
	rec := &o.ops[i]
	if rec.lines == spilled {
		return o.spill[i]
	}
	g := &o.plan.groups[o.plan.opGroup[i]]
	out := make([]inventory.Line, rec.lines)
	for j := range out {
		out[j] = inventory.Line{Warehouse: g.warehouses[rec.wh[j]], Count: int64(rec.count[j])}
	}
	return out
}
