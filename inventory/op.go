package inventory

import (
	"fmt"

	"allot/catalog"
)

// Kind is the kind of an Op. The numbers are stable: they are written to the
// journal. Every kind has one descriptor (descriptor.go) that says its name,
// whether it mutates, how it is checked, applied and encoded: adding a kind
// is one descriptor here, one command in each front end.
type Kind uint8

const (
	// KindCapture takes N units of Op.Key.Group() across its warehouses.
	KindCapture Kind = 1
	// KindRelease adds N units back to the row Op.Key.
	KindRelease Kind = 2
	// KindStock sets the row Op.Key to count N and price Price, creating it
	// if needed.
	KindStock Kind = 3
	// KindGet reads the row Op.Key.
	KindGet Kind = 4
	// KindAvailable reads the total of Op.Key.Group().
	KindAvailable Kind = 5
	// KindHold takes Op.Lines out of their groups and keeps them under
	// Op.Hold until it is confirmed, cancelled or expires Op.TTL
	// milliseconds after the batch's time.
	KindHold Kind = 6
	// KindConfirm makes hold Op.Hold's units leave inventory for good.
	KindConfirm Kind = 7
	// KindCancel returns hold Op.Hold's units to the rows they came from.
	KindCancel Kind = 8
	// KindExpire returns the units of hold Op.Hold, whose deadline has
	// passed, to their rows. Only the engine's writer submits it, from
	// State.NextDue: it is journaled so that replay expires the same holds
	// at the same points.
	KindExpire Kind = 9
	// KindOrder captures Op.Lines all or nothing: a hold confirmed in the
	// same step.
	KindOrder Kind = 10
	// KindHoldGet reads hold Op.Hold.
	KindHoldGet Kind = 11
	// Kinds 12 and up are kept for the catalog (catalog.set, catalog.del,
	// ...): see descriptor.go.
)

// kindMax bounds the descriptor table.
const kindMax = 32

func (k Kind) String() string {
	if d := k.descriptor(); d != nil {
		return d.name
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Mutates reports whether an op of this kind can change state, and so is
// written to the journal when it does.
func (k Kind) Mutates() bool {
	d := k.descriptor()
	return d != nil && d.mutates
}

// Keyed reports whether an op of this kind takes an idempotency key
// (Op.IdempotencyKey).
func (k Kind) Keyed() bool {
	d := k.descriptor()
	return d != nil && d.keyed
}

// Op is one operation on the state machine. For a capture and an available
// read, Key.Warehouse is ignored (the op names a group).
type Op struct {
	Kind  Kind
	Key   RowKey
	N     int64 // capture and release: the quantity; stock: the count
	Price int64 // stock only
	// IdempotencyKey, for the kinds that take one (Kind.Keyed), makes a
	// repeat of the op return the first reply instead of applying again;
	// "" means none.
	IdempotencyKey string
	// Hold is the hold id of hold, confirm, cancel, expire and hold-get.
	Hold string
	// TTL is a hold's time to live in milliseconds.
	TTL int64
	// Lines are the demand of a hold or an order, in request order.
	Lines []Demand
	// Record is catalog.set's record; Query is search's query (see
	// catalog_op.go). Pointers keep the ops that do not use them small.
	Record *catalog.Record
	Query  *catalog.Query
}

// Demand is one line of a hold or an order: n units of a group.
type Demand struct {
	Group GroupKey
	N     int64
}

// Capture returns the op that captures n units of group g.
func Capture(g GroupKey, n int64) Op {
	return Op{Kind: KindCapture, Key: RowKey{SKU: g.SKU, Condition: g.Condition, Source: g.Source}, N: n}
}

// Release returns the op that releases n units to row k.
func Release(k RowKey, n int64) Op { return Op{Kind: KindRelease, Key: k, N: n} }

// Stock returns the op that sets row k to count and price.
func Stock(k RowKey, count, price int64) Op {
	return Op{Kind: KindStock, Key: k, N: count, Price: price}
}

// Get returns the op that reads row k.
func Get(k RowKey) Op { return Op{Kind: KindGet, Key: k} }

// Available returns the op that reads the total of group g.
func Available(g GroupKey) Op {
	return Op{Kind: KindAvailable, Key: RowKey{SKU: g.SKU, Condition: g.Condition, Source: g.Source}}
}

// Hold returns the op that holds lines under id for ttl milliseconds.
func Hold(id string, ttlMS int64, lines []Demand) Op {
	return Op{Kind: KindHold, Hold: id, TTL: ttlMS, Lines: lines}
}

// Confirm returns the op that confirms hold id.
func Confirm(id string) Op { return Op{Kind: KindConfirm, Hold: id} }

// Cancel returns the op that cancels hold id.
func Cancel(id string) Op { return Op{Kind: KindCancel, Hold: id} }

// Expire returns the op that expires hold id.
func Expire(id string) Op { return Op{Kind: KindExpire, Hold: id} }

// Order returns the op that captures lines all or nothing.
func Order(lines []Demand) Op { return Op{Kind: KindOrder, Lines: lines} }

// HoldGet returns the op that reads hold id.
func HoldGet(id string) Op { return Op{Kind: KindHoldGet, Hold: id} }

// Check reports what is wrong with op, or "" when it is well formed. It
// does not look at state: an op that passes may still be insufficient or name
// an unknown row.
func (op *Op) Check() string {
	d := op.Kind.descriptor()
	if d == nil {
		return "unknown op kind"
	}
	if dd := op.checkIdempotencyKey(d); dd != "" {
		return dd
	}
	if d.check != nil {
		return d.check(op)
	}
	if d.checkLines != nil {
		return d.checkLines(op, false)
	}
	if dd := d.checkKey(op); dd != "" {
		return dd
	}
	return d.checkFields(op)
}

// checkIdempotencyKey reports what is wrong with op's idempotency key for
// its kind (d), or "" when it has none or a good one.
func (op *Op) checkIdempotencyKey(d *descriptor) string {
	if op.IdempotencyKey == "" {
		return ""
	}
	if !d.keyed {
		return op.Kind.String() + " takes no idempotency key"
	}
	if dd := CheckID(op.IdempotencyKey); dd != "" {
		return "idempotency key " + dd
	}
	return ""
}

// CheckValidKey is Check for an op whose key's identifiers each passed
// CheckID: the sku, condition and source of a capture or an available
// read, and the warehouse too for the kinds that name a row (release,
// stock, get). It returns what Check would, without checking them again.
// The RESP decoder uses it when its interner already knew the strings
// valid. For the kinds that name no row or group it is Check.
func (op *Op) CheckValidKey() string {
	d := op.Kind.descriptor()
	if d == nil || d.checkKey == nil {
		return op.Check()
	}
	if dd := op.checkIdempotencyKey(d); dd != "" {
		return dd
	}
	return d.checkFields(op)
}

// CheckValidLines is Check for an op with lines (a hold, an order) whose
// lines' identifiers, the sku, condition and source of every line, each
// passed CheckID. It returns what Check would, without checking them
// again: the same rules (idempotency key, hold id, ttl, number of lines,
// each line's quantity) by the same function, in the same order. The
// RESP decoder uses it when its interner already knew every line's
// strings valid. For the kinds without lines it is Check.
func (op *Op) CheckValidLines() string {
	d := op.Kind.descriptor()
	if d == nil || d.checkLines == nil {
		return op.Check()
	}
	if dd := op.checkIdempotencyKey(d); dd != "" {
		return dd
	}
	return d.checkLines(op, true)
}

// Code is the outcome of an Op. The numbers are stable and map one to one to
// wire errors.
type Code uint8

const (
	// CodeOK: the op was applied (or the read found its row).
	CodeOK Code = 0
	// CodeInsufficient: a capture asked for more than its group holds;
	// Result.Available holds the group's total. For a hold or an order,
	// Result.ShortLine is the first short line. Nothing changed.
	CodeInsufficient Code = 1
	// CodeNotFound: a release or a get named a row that does not exist, or
	// a confirm, cancel or hold-get a hold that is unknown. Nothing changed.
	CodeNotFound Code = 2
	// CodeInvalid: the op broke an input rule; Result.Detail says which.
	// Nothing changed.
	CodeInvalid Code = 3
	// CodeOverflow: a release would carry a row's count past CountMax.
	// Nothing changed.
	CodeOverflow Code = 4
	// CodeMismatch: the idempotency key (or the hold id) was first used
	// with other arguments. Nothing changed.
	CodeMismatch Code = 5
	// CodeExpired: the hold expired before it was confirmed.
	CodeExpired Code = 6
	// CodeCancelled: the hold was cancelled before it was confirmed.
	CodeCancelled Code = 7
	// CodeConfirmed: the hold was confirmed before it was cancelled.
	CodeConfirmed Code = 8
)

var codeNames = [...]string{"ok", "insufficient", "not_found", "invalid", "overflow", "mismatch", "expired", "cancelled", "confirmed"}

// CodeCount is one past the highest Code: every code below it has a name
// (Code.String), and a table indexed by Code has CodeCount entries.
const CodeCount = Code(len(codeNames))

func (c Code) String() string {
	if int(c) < len(codeNames) {
		return codeNames[c]
	}
	return fmt.Sprintf("code(%d)", uint8(c))
}

// HoldState is the state of a hold. The numbers are stable: snapshots,
// the stores' procedures and their replies carry them.
type HoldState uint8

const (
	// HoldUnknown: no such hold (a read that found none).
	HoldUnknown HoldState = 0
	// HoldHeld: units are out of their rows, waiting for confirm, cancel
	// or the deadline.
	HoldHeld HoldState = 1
	// HoldConfirmed: the units left inventory for good.
	HoldConfirmed HoldState = 2
	// HoldCancelled: the units went back to the rows they came from.
	HoldCancelled HoldState = 3
	// HoldExpired: the deadline passed first; the units went back.
	HoldExpired HoldState = 4
)

func (s HoldState) String() string {
	switch s {
	case HoldUnknown:
		return "unknown"
	case HoldHeld:
		return "held"
	case HoldConfirmed:
		return "confirmed"
	case HoldCancelled:
		return "cancelled"
	case HoldExpired:
		return "expired"
	}
	return fmt.Sprintf("hold_state(%d)", uint8(s))
}

// Allocation is the units a hold or an order took from one row.
type Allocation struct {
	Row   RowKey
	Count int64
}

// Result is what Apply returns.
type Result struct {
	Code Code
	// Lines: a successful capture's allocation, in warehouse order. The
	// slice is the buffer the caller passed to Apply, grown if needed.
	Lines []Line
	// Count: the row's new count (release, stock), the row's count (get),
	// or the group's total (available).
	Count int64
	// Price: the row's price (stock, get).
	Price int64
	// Available: the group's total when a capture, hold or order was
	// insufficient (for a hold or order: the total of the group of line
	// ShortLine, before the request).
	Available int64
	// ShortLine: for an insufficient hold or order, the index of the first
	// request line whose group's summed demand exceeds its total.
	ShortLine int
	// Allocations: a hold's or an order's units, in request-line order of
	// their groups (a group named twice appears once, at its first line),
	// each group's rows in allocation order. Also for hold-get.
	Allocations []Allocation
	// ExpiresAt: a hold's deadline, in milliseconds of the engine's clock
	// (hold, hold-get).
	ExpiresAt int64
	// State: hold-get's hold state.
	State HoldState
	// Record: catalog.get's record. Hits: search's results.
	Record *catalog.Record
	Hits   []catalog.Result
	// Detail: what was wrong, for CodeInvalid, CodeOverflow and
	// CodeMismatch.
	Detail string
	// Changed reports that the op changed state (and so must be
	// journaled): an applied mutation, a key remembered with its business
	// outcome, a hold expired on the way. A repeat answered from an
	// idempotency key changes nothing.
	Changed bool
	// Repeat reports that the reply is the first reply of an earlier op
	// with the same idempotency key (or hold id), applied nothing now.
	Repeat bool
}
