package resp

import (
	"strconv"

	"allot/inventory"
)

// Replies of the wire contract. They are appended to a caller's buffer so
// that a whole pipeline's replies go out in one write.

// AppendSimple appends a simple string reply (+s). s must not hold CR or LF.
func AppendSimple(b []byte, s string) []byte {
	b = append(b, '+')
	b = appendLine(b, s)
	return append(b, '\r', '\n')
}

// AppendOK appends +OK.
func AppendOK(b []byte) []byte { return append(b, "+OK\r\n"...) }

// AppendError appends an error reply. msg starts with its error word (ERR,
// INSUFFICIENT, NOTFOUND, NOAUTH, ...); CR and LF in it become spaces.
func AppendError(b []byte, msg string) []byte {
	b = append(b, '-')
	b = appendLine(b, msg)
	return append(b, '\r', '\n')
}

// AppendErr appends -ERR detail.
func AppendErr(b []byte, detail string) []byte {
	b = append(b, "-ERR "...)
	b = appendLine(b, detail)
	return append(b, '\r', '\n')
}

func appendLine(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\r' || c == '\n' {
			c = ' '
		}
		b = append(b, c)
	}
	return b
}

// appendDecimal appends n in decimal: strconv.AppendInt, with a single
// digit (a reply's array length, a short warehouse's length, a capture's
// count of 1) appended without its general path.
func appendDecimal(b []byte, n int64) []byte {
	if uint64(n) < 10 {
		return append(b, byte('0'+n))
	}
	return strconv.AppendInt(b, n, 10)
}

// AppendInt appends an integer reply.
func AppendInt(b []byte, n int64) []byte {
	b = append(b, ':')
	b = appendDecimal(b, n)
	return append(b, '\r', '\n')
}

// AppendArray appends an array header of n elements.
func AppendArray(b []byte, n int) []byte {
	b = append(b, '*')
	b = appendDecimal(b, int64(n))
	return append(b, '\r', '\n')
}

// AppendNullArray appends the RESP2 null array, the "nil" of STOCK.GET.
func AppendNullArray(b []byte) []byte { return append(b, "*-1\r\n"...) }

// AppendNullBulk appends the RESP2 null bulk string.
func AppendNullBulk(b []byte) []byte { return append(b, "$-1\r\n"...) }

// AppendBulk appends a bulk string.
func AppendBulk(b []byte, s string) []byte {
	b = append(b, '$')
	b = appendDecimal(b, int64(len(s)))
	b = append(b, '\r', '\n')
	b = append(b, s...)
	return append(b, '\r', '\n')
}

// AppendBulkBytes appends a bulk string.
func AppendBulkBytes(b []byte, s []byte) []byte {
	b = append(b, '$')
	b = appendDecimal(b, int64(len(s)))
	b = append(b, '\r', '\n')
	b = append(b, s...)
	return append(b, '\r', '\n')
}

// AppendResult appends the contract's reply to op with outcome r:
//
//	capture   ok: *k of [warehouse, count]   insufficient: -INSUFFICIENT available <k>
//	release   ok: :count                     not found: -NOTFOUND no such row
//	stock     ok: +OK
//	get       ok: *2 [count, price]          not found: nil (*-1)
//	available ok: :total
//	hold      ok: *2 [expires-at, lines]     insufficient: -INSUFFICIENT <sku> <condition> <source> available <k>
//	order     ok: lines                      insufficient: as hold's
//	confirm, cancel  ok: +OK                 -NOTFOUND, -EXPIRED, -CANCELLED, -CONFIRMED
//	hold.get  ok: *3 [state, expires-at, lines]   not found: nil (*-1)
//	any       invalid, overflow: -ERR <detail>    mismatch: -MISMATCH <detail>
//
// where lines is an array of [sku, warehouse, condition, source, count].
func AppendResult(b []byte, op *inventory.Op, r *inventory.Result) []byte {
	if out, ok := appendCatalogResult(b, op, r); ok {
		return out
	}
	k := op.Kind
	switch r.Code {
	case inventory.CodeOK:
		switch k {
		case inventory.KindCapture:
			b = AppendArray(b, len(r.Lines))
			for _, l := range r.Lines {
				b = append(b, "*2\r\n"...)
				b = AppendBulk(b, l.Warehouse)
				b = AppendInt(b, l.Count)
			}
			return b
		case inventory.KindRelease, inventory.KindAvailable:
			return AppendInt(b, r.Count)
		case inventory.KindStock, inventory.KindConfirm, inventory.KindCancel:
			return AppendOK(b)
		case inventory.KindGet:
			b = append(b, "*2\r\n"...)
			b = AppendInt(b, r.Count)
			return AppendInt(b, r.Price)
		case inventory.KindHold:
			b = append(b, "*2\r\n"...)
			b = AppendInt(b, r.ExpiresAt)
			return appendAllocations(b, r.Allocations)
		case inventory.KindOrder:
			return appendAllocations(b, r.Allocations)
		case inventory.KindHoldGet:
			b = append(b, "*3\r\n"...)
			b = AppendBulk(b, r.State.String())
			b = AppendInt(b, r.ExpiresAt)
			return appendAllocations(b, r.Allocations)
		}
	case inventory.CodeInsufficient:
		b = append(b, "-INSUFFICIENT "...)
		if (k == inventory.KindHold || k == inventory.KindOrder) && r.ShortLine < len(op.Lines) {
			g := op.Lines[r.ShortLine].Group
			b = appendLine(b, g.SKU)
			b = append(b, ' ')
			b = appendLine(b, g.Condition)
			b = append(b, ' ')
			b = appendLine(b, g.Source)
			b = append(b, ' ')
		}
		b = append(b, "available "...)
		b = strconv.AppendInt(b, r.Available, 10)
		return append(b, '\r', '\n')
	case inventory.CodeNotFound:
		switch k {
		case inventory.KindGet, inventory.KindHoldGet:
			return AppendNullArray(b)
		case inventory.KindConfirm, inventory.KindCancel:
			return AppendError(b, "NOTFOUND no such hold "+op.Hold)
		}
		return append(b, "-NOTFOUND no such row\r\n"...)
	case inventory.CodeExpired:
		return AppendError(b, "EXPIRED hold "+op.Hold+" expired")
	case inventory.CodeCancelled:
		return AppendError(b, "CANCELLED hold "+op.Hold+" was cancelled")
	case inventory.CodeConfirmed:
		return AppendError(b, "CONFIRMED hold "+op.Hold+" was confirmed")
	case inventory.CodeMismatch:
		return AppendError(b, "MISMATCH "+r.Detail)
	case inventory.CodeInvalid, inventory.CodeOverflow:
		return AppendErr(b, r.Detail)
	}
	return AppendErr(b, "internal: op "+k.String()+" gave outcome "+r.Code.String())
}
