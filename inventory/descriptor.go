package inventory

import "encoding/binary"

// descriptor is everything the state machine knows about one op kind, in
// one place: its name, whether it mutates (and so is journaled), whether it
// takes an idempotency key, how it is checked for form, applied, and
// encoded in the journal.
//
// The alternative this replaced, a switch on the kind in every function
// (Check, Apply, the journal's encoder and decoder, String, Mutates), made a
// new kind touch every one of them; a forgotten case compiled and failed at
// run time. With a table, a kind that is missing a function fails at start
// (define panics).
type descriptor struct {
	name    string
	mutates bool
	keyed   bool
	// since is the journal format version that introduced the kind.
	since int
	// check reports what is wrong with the op's fields ("" when nothing).
	// The kinds whose op names a row or a group leave it nil and check in
	// two steps instead: checkKey, the key's identifiers, then
	// checkFields, the rest (Op.Check). Op.CheckValidKey runs checkFields
	// alone for an op whose identifiers its caller already found valid.
	// The kinds with lines (hold, order) leave both forms nil and check
	// with checkLines: every rule, but the lines' identifiers only when
	// linesValid is false (Op.Check); Op.CheckValidLines passes true for
	// an op whose lines' identifiers its caller already found valid. A
	// line's identifiers are checked before its quantity and after the
	// line before it, so the two steps of checkKey and checkFields would
	// answer a different line first. A kind has exactly one of the three.
	check       func(op *Op) string
	checkKey    func(op *Op) string
	checkFields func(op *Op) string
	checkLines  func(op *Op, linesValid bool) string
	// apply applies a checked op. It fills res; it sets res.Changed when
	// state changed. An op that is not applied changes nothing.
	apply func(s *State, op *Op, res *Result)
	// encode appends the op's fields (not the kind byte nor the key);
	// decode reads them back. Only for mutating kinds.
	encode func(dst []byte, op *Op) []byte
	decode func(d *Decoder, op *Op) error
}

var descriptors [kindMax]*descriptor

// define registers a kind's descriptor. It is called from init functions;
// a duplicate or an incomplete descriptor is a programming error.
func define(k Kind, d *descriptor) {
	if int(k) >= kindMax || descriptors[k] != nil {
		panic("inventory: kind " + d.name + " defined twice or out of range")
	}
	forms := 0
	for _, has := range []bool{d.check != nil, d.checkKey != nil || d.checkFields != nil, d.checkLines != nil} {
		if has {
			forms++
		}
	}
	twoSteps := (d.checkKey != nil) == (d.checkFields != nil)
	if forms != 1 || !twoSteps || d.apply == nil || (d.mutates && (d.encode == nil || d.decode == nil)) {
		panic("inventory: kind " + d.name + " is missing a function or has two ways to check")
	}
	if d.since == 0 {
		d.since = 1
	}
	descriptors[k] = d
}

// The descriptors' two-step checks (descriptor.checkKey, checkFields).
func checkGroupKey(op *Op) string { return CheckGroupKey(op.Key.Group()) }
func checkRowKey(op *Op) string   { return CheckRowKey(op.Key) }
func checkQuantity(op *Op) string { return CheckQuantity(op.N) }
func noFields(*Op) string         { return "" }

func (k Kind) descriptor() *descriptor {
	if int(k) >= kindMax {
		return nil
	}
	return descriptors[k]
}

func init() {
	define(KindCapture, &descriptor{
		name: "capture", mutates: true, keyed: true,
		checkKey:    checkGroupKey,
		checkFields: checkQuantity,
		apply:       func(s *State, op *Op, res *Result) { s.capture(op.Key.Group(), op.N, res) },
		encode: func(dst []byte, op *Op) []byte {
			dst = AppendString(dst, op.Key.SKU)
			dst = AppendString(dst, op.Key.Condition)
			dst = AppendString(dst, op.Key.Source)
			return binary.AppendUvarint(dst, uint64(op.N))
		},
		decode: func(d *Decoder, op *Op) (err error) {
			if err = d.strings(&op.Key.SKU, &op.Key.Condition, &op.Key.Source); err != nil {
				return err
			}
			op.N, err = d.Int62()
			return err
		},
	})
	define(KindRelease, &descriptor{
		name: "release", mutates: true, keyed: true,
		checkKey:    checkRowKey,
		checkFields: checkQuantity,
		apply:       func(s *State, op *Op, res *Result) { s.release(op.Key, op.N, res) },
		encode: func(dst []byte, op *Op) []byte {
			dst = appendRowKey(dst, op.Key)
			return binary.AppendUvarint(dst, uint64(op.N))
		},
		decode: func(d *Decoder, op *Op) (err error) {
			if err = d.rowKey(&op.Key); err != nil {
				return err
			}
			op.N, err = d.Int62()
			return err
		},
	})
	define(KindStock, &descriptor{
		name: "stock", mutates: true, keyed: true,
		checkKey: checkRowKey,
		checkFields: func(op *Op) string {
			if d := CheckCount(op.N); d != "" {
				return d
			}
			return CheckPrice(op.Price)
		},
		apply: func(s *State, op *Op, res *Result) { s.stock(op.Key, op.N, op.Price, res) },
		encode: func(dst []byte, op *Op) []byte {
			dst = appendRowKey(dst, op.Key)
			dst = binary.AppendUvarint(dst, uint64(op.N))
			return binary.AppendUvarint(dst, uint64(op.Price))
		},
		decode: func(d *Decoder, op *Op) (err error) {
			if err = d.rowKey(&op.Key); err != nil {
				return err
			}
			if op.N, err = d.Int62(); err != nil {
				return err
			}
			op.Price, err = d.Int62()
			return err
		},
	})
	define(KindGet, &descriptor{
		name:        "get",
		checkKey:    checkRowKey,
		checkFields: noFields,
		apply: func(s *State, op *Op, res *Result) {
			r := s.rows[op.Key]
			if r == nil {
				res.Code = CodeNotFound
				return
			}
			res.Count, res.Price = r.count, r.price
		},
	})
	define(KindAvailable, &descriptor{
		name:        "available",
		checkKey:    checkGroupKey,
		checkFields: noFields,
		apply: func(s *State, op *Op, res *Result) {
			if g := s.lookupGroup(op.Key.Group()); g != nil {
				res.Count = g.available()
			}
		},
	})
}

func appendRowKey(dst []byte, k RowKey) []byte {
	dst = AppendString(dst, k.SKU)
	dst = AppendString(dst, k.Warehouse)
	dst = AppendString(dst, k.Condition)
	return AppendString(dst, k.Source)
}

func (d *Decoder) rowKey(k *RowKey) error {
	return d.strings(&k.SKU, &k.Warehouse, &k.Condition, &k.Source)
}
