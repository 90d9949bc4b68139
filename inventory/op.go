package inventory

import "fmt"

// Kind is the kind of an Op. The numbers are stable: they are written to the
// journal.
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
)

func (k Kind) String() string {
	switch k {
	case KindCapture:
		return "capture"
	case KindRelease:
		return "release"
	case KindStock:
		return "stock"
	case KindGet:
		return "get"
	case KindAvailable:
		return "available"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Mutates reports whether an op of this kind can change state, and so is
// written to the journal when it succeeds.
func (k Kind) Mutates() bool {
	return k == KindCapture || k == KindRelease || k == KindStock
}

// Op is one operation on the state machine. For a capture and an available
// read, Key.Warehouse is ignored (the op names a group).
type Op struct {
	Kind  Kind
	Key   RowKey
	N     int64 // capture and release: the quantity; stock: the count
	Price int64 // stock only
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

// Check reports what is wrong with op, or "" when it is well formed. It
// does not look at state: an op that passes may still be insufficient or name
// an unknown row.
func (op *Op) Check() string {
	switch op.Kind {
	case KindCapture:
		if d := CheckGroupKey(op.Key.Group()); d != "" {
			return d
		}
		return CheckQuantity(op.N)
	case KindRelease:
		if d := CheckRowKey(op.Key); d != "" {
			return d
		}
		return CheckQuantity(op.N)
	case KindStock:
		if d := CheckRowKey(op.Key); d != "" {
			return d
		}
		if d := CheckCount(op.N); d != "" {
			return d
		}
		return CheckPrice(op.Price)
	case KindGet:
		return CheckRowKey(op.Key)
	case KindAvailable:
		return CheckGroupKey(op.Key.Group())
	}
	return "unknown op kind"
}

// Code is the outcome of an Op. The numbers are stable and map one to one to
// wire errors.
type Code uint8

const (
	// CodeOK: the op was applied (or the read found its row).
	CodeOK Code = 0
	// CodeInsufficient: a capture asked for more than its group holds;
	// Result.Available holds the group's total. Nothing changed.
	CodeInsufficient Code = 1
	// CodeNotFound: a release or a get named a row that does not exist.
	// Nothing changed.
	CodeNotFound Code = 2
	// CodeInvalid: the op broke an input rule; Result.Detail says which.
	// Nothing changed.
	CodeInvalid Code = 3
	// CodeOverflow: a release would carry a row's count past CountMax.
	// Nothing changed.
	CodeOverflow Code = 4
)

func (c Code) String() string {
	switch c {
	case CodeOK:
		return "ok"
	case CodeInsufficient:
		return "insufficient"
	case CodeNotFound:
		return "not_found"
	case CodeInvalid:
		return "invalid"
	case CodeOverflow:
		return "overflow"
	}
	return fmt.Sprintf("code(%d)", uint8(c))
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
	// Available: the group's total when a capture was insufficient.
	Available int64
	// Detail: what was wrong, for CodeInvalid and CodeOverflow.
	Detail string
}
