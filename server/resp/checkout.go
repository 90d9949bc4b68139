package resp

import (
	"strconv"

	"allot/inventory"
)

// decodeLinesOp decodes HOLD and ORDER, whose argument count depends on
// their lines:
//
//	HOLD <hold> <ttl-ms> (<sku> <condition> <source> <n>)...
//	ORDER (<sku> <condition> <source> <n>)... [ID <key>]
//
// The counts are unambiguous: a HOLD has 3+4k arguments, an ORDER 1+4k or,
// with its key, 3+4k. lines is the buffer for op.Lines.
func decodeLinesOp(s *spec, args [][]byte, in Interner, op *inventory.Op, lines []inventory.Demand) string {
	first := 1
	switch s.kind {
	case inventory.KindHold:
		if len(args) < 7 || (len(args)-3)%4 != 0 {
			return ArityError(s.name)
		}
		op.Hold = string(args[1]) // one per cart: not interned (see DecodeOp)
		ttl, ok := ParseInt(args[2])
		if !ok {
			return "ttl must be an integer from 1 to 604800000 milliseconds"
		}
		op.TTL = ttl
		first = 3
	case inventory.KindOrder:
		switch {
		case len(args) >= 5 && (len(args)-1)%4 == 0:
		case len(args) >= 7 && (len(args)-1)%4 == 2:
			if !EqualFold(args[len(args)-2], "ID") {
				return "syntax error: expected ID <key> after the lines, got '" + string(printableWord(args[len(args)-2])) + "'"
			}
			op.IdempotencyKey = string(args[len(args)-1])
			if op.IdempotencyKey == "" {
				return "idempotency key is empty"
			}
			args = args[:len(args)-2]
		default:
			return ArityError(s.name)
		}
	default:
		return "not a lines command"
	}
	if (len(args)-first)/4 > inventory.HoldLinesMax {
		return "a hold or an order takes 1 to 64 lines"
	}
	validLines := true
	for i := first; i+3 < len(args); i += 4 {
		n, ok := ParseInt(args[i+3])
		if !ok {
			return "line " + strconv.Itoa((i-first)/4+1) + ": " + inventory.CheckQuantity(0)
		}
		sku, skuOK := in.InternID(args[i])
		condition, conditionOK := in.InternID(args[i+1])
		source, sourceOK := in.InternID(args[i+2])
		validLines = validLines && skuOK && conditionOK && sourceOK
		lines = append(lines, inventory.Demand{
			Group: inventory.GroupKey{SKU: sku, Condition: condition, Source: source},
			N:     n,
		})
	}
	op.Lines = lines
	if validLines {
		// The interner knew every line's identifiers valid: check the
		// rest, with the same result as Check (it was 13% of a HOLD's
		// instructions on the server's path, most of it CheckID again).
		return op.CheckValidLines()
	}
	return op.Check()
}

// printableWord cuts a client's word for an error message: at most 32
// bytes, control bytes shown as '?'.
func printableWord(b []byte) []byte {
	if len(b) > 32 {
		b = b[:32]
	}
	out := make([]byte, len(b))
	for i, c := range b {
		if c < 0x20 || c == 0x7f {
			c = '?'
		}
		out[i] = c
	}
	return out
}

// appendAllocations appends a hold's or an order's lines: an array of
// [sku, warehouse, condition, source, count].
func appendAllocations(b []byte, as []inventory.Allocation) []byte {
	b = AppendArray(b, len(as))
	for _, a := range as {
		b = append(b, "*5\r\n"...)
		b = AppendBulk(b, a.Row.SKU)
		b = AppendBulk(b, a.Row.Warehouse)
		b = AppendBulk(b, a.Row.Condition)
		b = AppendBulk(b, a.Row.Source)
		b = AppendInt(b, a.Count)
	}
	return b
}
