package resp

import (
	"allot/catalog"
	"allot/inventory"
)

// The catalog commands (DESIGN.md, "Catalog and search"):
//
//	CATALOG.SET <sku> <title> <brand> [<attr> <value> ...] [ID <key>]  -> +OK
//	CATALOG.GET <sku>      -> *3 [title, brand, *2k [attr, value, ...]] | nil (*-1)
//	CATALOG.DEL <sku> [ID <key>]  -> :1 | :0
//	SEARCH <prefix> [BRAND <prefix>] [OFFSET <o>] [LIMIT <l>]
//	                       -> *n of *4 [sku, title, brand, available]
//
// CATALOG.SET's attributes and its idempotency key are both trailing
// pairs: a last pair whose first word is ID (in any ASCII case) is the key.
// The attribute name id (any case) is reserved, refused wherever it stands
// (catalog.Record.CheckReservedNames), as HTTP refuses it: a trailing ID
// pair means one thing only.

// isCatalogKind reports whether k is decoded here.
func isCatalogKind(k inventory.Kind) bool {
	switch k {
	case inventory.KindCatalogSet, inventory.KindCatalogGet, inventory.KindCatalogDel, inventory.KindSearch:
		return true
	}
	return false
}

// decodeCatalogOp decodes a catalog command into op; "" on success.
func decodeCatalogOp(s *spec, args [][]byte, in Interner, op *inventory.Op, query *catalog.Query) string {
	switch s.kind {
	case inventory.KindCatalogSet:
		if len(args) < 4 || len(args)%2 != 0 {
			return ArityError(s.name)
		}
		rest := args[4:]
		if n := len(rest); n >= 2 && EqualFold(rest[n-2], "ID") {
			op.IdempotencyKey = string(rest[n-1])
			if op.IdempotencyKey == "" {
				return "idempotency key is empty"
			}
			rest = rest[:n-2]
		}
		if len(rest)/2 > catalog.AttributesMax {
			return "has more than 32 attributes"
		}
		r := &catalog.Record{SKU: in.Intern(args[1]), Title: string(args[2]), Brand: string(args[3])}
		if len(rest) > 0 {
			r.Attributes = make([]catalog.Attribute, 0, len(rest)/2)
			for i := 0; i < len(rest); i += 2 {
				r.Attributes = append(r.Attributes, catalog.Attribute{Name: in.Intern(rest[i]), Value: string(rest[i+1])})
			}
		}
		op.Record = r
		if d := op.Check(); d != "" {
			return d
		}
		return r.CheckReservedNames()
	case inventory.KindCatalogGet:
		if len(args) != 2 {
			return ArityError(s.name)
		}
		op.Key.SKU = in.Intern(args[1])
	case inventory.KindCatalogDel:
		switch {
		case len(args) == 4 && EqualFold(args[2], "ID"):
			op.IdempotencyKey = string(args[3])
			if op.IdempotencyKey == "" {
				return "idempotency key is empty"
			}
		case len(args) == 4:
			return "syntax error: expected ID <key> after the arguments, got '" + string(printableWord(args[2])) + "'"
		case len(args) != 2:
			return ArityError(s.name)
		}
		op.Key.SKU = in.Intern(args[1])
	case inventory.KindSearch:
		if len(args) < 2 || len(args)%2 != 0 {
			return ArityError(s.name)
		}
		q := query
		if q == nil {
			q = new(catalog.Query)
		}
		*q = catalog.Query{Prefix: string(args[1])}
		var seen [3]bool
		for i := 2; i < len(args); i += 2 {
			v := args[i+1]
			var which int
			switch {
			case EqualFold(args[i], "BRAND"):
				which = 0
				q.Brand = string(v)
				if q.Brand == "" {
					return "brand prefix is empty"
				}
			case EqualFold(args[i], "OFFSET"):
				which = 1
				n, ok := ParseInt(v)
				if !ok || n < 0 || n > catalog.OffsetMax {
					return "offset must be from 0 to 100000"
				}
				q.Offset = int(n)
			case EqualFold(args[i], "LIMIT"):
				which = 2
				n, ok := ParseInt(v)
				if !ok || n < 1 || n > catalog.LimitMax {
					return "limit must be from 1 to 1000"
				}
				q.Limit = int(n)
			default:
				return "syntax error: expected BRAND, OFFSET or LIMIT, got '" + string(printableWord(args[i])) + "'"
			}
			if seen[which] {
				return "syntax error: " + string(printableWord(args[i])) + " given twice"
			}
			seen[which] = true
		}
		op.Query = q
	}
	return op.Check()
}

// appendCatalogResult appends the success replies of the catalog
// commands and CATALOG.GET's nil; ok is false for anything else (errors
// are AppendResult's common ones).
func appendCatalogResult(b []byte, op *inventory.Op, r *inventory.Result) ([]byte, bool) {
	if !isCatalogKind(op.Kind) {
		return b, false
	}
	switch r.Code {
	case inventory.CodeNotFound:
		if op.Kind == inventory.KindCatalogGet {
			return AppendNullArray(b), true
		}
		return b, false
	case inventory.CodeOK:
	default:
		return b, false
	}
	switch op.Kind {
	case inventory.KindCatalogSet:
		return AppendOK(b), true
	case inventory.KindCatalogDel:
		return AppendInt(b, r.Count), true
	case inventory.KindCatalogGet:
		rec := r.Record
		if rec == nil {
			return AppendNullArray(b), true
		}
		b = append(b, "*3\r\n"...)
		b = AppendBulk(b, rec.Title)
		b = AppendBulk(b, rec.Brand)
		b = AppendArray(b, 2*len(rec.Attributes))
		for _, a := range rec.Attributes {
			b = AppendBulk(b, a.Name)
			b = AppendBulk(b, a.Value)
		}
		return b, true
	case inventory.KindSearch:
		b = AppendArray(b, len(r.Hits))
		for i := range r.Hits {
			h := &r.Hits[i]
			b = append(b, "*4\r\n"...)
			b = AppendBulk(b, h.SKU)
			b = AppendBulk(b, h.Title)
			b = AppendBulk(b, h.Brand)
			b = AppendInt(b, h.Available)
		}
		return b, true
	}
	return b, false
}
