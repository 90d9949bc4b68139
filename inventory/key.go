package inventory

import (
	"fmt"
	"unicode"
	"unicode/utf8"
)

// Limits of the domain. They are part of the wire contract.
const (
	// IDBytesMax is the longest identifier, in bytes of UTF-8.
	IDBytesMax = 64
	// QuantityMax is the largest n a capture or a release may ask for.
	QuantityMax = 1<<31 - 1
	// CountMax is the largest count a row may hold, and the largest price.
	CountMax = 1<<62 - 1
)

// RowKey identifies a row.
type RowKey struct {
	SKU       string
	Warehouse string
	Condition string
	Source    string
}

// GroupKey identifies a group: the rows of one SKU, condition and source
// across all warehouses.
type GroupKey struct {
	SKU       string
	Condition string
	Source    string
}

// Group returns the group the row belongs to.
func (k RowKey) Group() GroupKey {
	return GroupKey{SKU: k.SKU, Condition: k.Condition, Source: k.Source}
}

// Row returns the key of the group's row in warehouse w.
func (g GroupKey) Row(warehouse string) RowKey {
	return RowKey{SKU: g.SKU, Warehouse: warehouse, Condition: g.Condition, Source: g.Source}
}

func (k RowKey) String() string {
	return fmt.Sprintf("(%q, %q, %q, %q)", k.SKU, k.Warehouse, k.Condition, k.Source)
}

func (g GroupKey) String() string {
	return fmt.Sprintf("(%q, %q, %q)", g.SKU, g.Condition, g.Source)
}

// Row is one row of stock.
type Row struct {
	Key   RowKey
	Count int64
	Price int64
}

// Line is one warehouse's share of a capture.
type Line struct {
	Warehouse string
	Count     int64
}

// CheckID reports what is wrong with an identifier, or "" when it is valid:
// UTF-8, 1..IDBytesMax bytes, no control characters. The returned detail is a
// constant string so that the hot path does not allocate.
func CheckID(s string) string {
	if len(s) == 0 {
		return "is empty"
	}
	if len(s) > IDBytesMax {
		return "is longer than 64 bytes"
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == 0x7f {
				return "contains a control character"
			}
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			return "is not valid UTF-8"
		}
		if unicode.IsControl(r) {
			return "contains a control character"
		}
		i += size - 1
	}
	return ""
}

// CheckRowKey checks every identifier of k. It returns "" when k is valid,
// else a detail such as "warehouse is empty".
func CheckRowKey(k RowKey) string {
	if d := CheckID(k.SKU); d != "" {
		return "sku " + d
	}
	if d := CheckID(k.Warehouse); d != "" {
		return "warehouse " + d
	}
	if d := CheckID(k.Condition); d != "" {
		return "condition " + d
	}
	if d := CheckID(k.Source); d != "" {
		return "source " + d
	}
	return ""
}

// CheckGroupKey checks every identifier of g.
func CheckGroupKey(g GroupKey) string {
	if d := CheckID(g.SKU); d != "" {
		return "sku " + d
	}
	if d := CheckID(g.Condition); d != "" {
		return "condition " + d
	}
	if d := CheckID(g.Source); d != "" {
		return "source " + d
	}
	return ""
}

// CheckQuantity checks the n of a capture or a release.
func CheckQuantity(n int64) string {
	if n < 1 || n > QuantityMax {
		return "quantity must be an integer from 1 to 2147483647"
	}
	return ""
}

// CheckCount checks a stocked count.
func CheckCount(n int64) string {
	if n < 0 || n > CountMax {
		return "count must be an integer from 0 to 4611686018427387903"
	}
	return ""
}

// CheckPrice checks a price in minor units.
func CheckPrice(n int64) string {
	if n < 0 || n > CountMax {
		return "price must be an integer from 0 to 4611686018427387903"
	}
	return ""
}
