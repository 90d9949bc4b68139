package redis

import (
	"strings"

	"allot/inventory"
)

// Key scheme. Identifiers are UTF-8 without control characters, so the unit
// separator cannot occur inside one: joining the parts with it is
// unambiguous, and splitting a key on it gives the parts back. A
// length-prefixed scheme would be as safe but makes keys harder to read in
// redis-cli and needs a parser.
const (
	separator   = "\x1f"
	keyPrefix   = "allot:"
	rowPrefix   = keyPrefix + "r" + separator
	groupPrefix = keyPrefix + "g" + separator
	// fieldCount and fieldPrice are the fields of a row's hash.
	fieldCount = "c"
	fieldPrice = "p"
)

// rowKey is the key of row k's hash.
func rowKey(k inventory.RowKey) string {
	return rowPrefix + k.SKU + separator + k.Warehouse + separator + k.Condition + separator + k.Source
}

// groupKey is the key of group g's warehouse index.
func groupKey(g inventory.GroupKey) string {
	return groupPrefix + g.SKU + separator + g.Condition + separator + g.Source
}

// rowKeyAround returns the parts of a row key of group g before and after
// the warehouse, which the capture script joins with each warehouse id.
func rowKeyAround(g inventory.GroupKey) (before, after string) {
	return rowPrefix + g.SKU + separator, separator + g.Condition + separator + g.Source
}

// parseRowKey is the inverse of rowKey. It reports false for a key that is
// not a row key.
func parseRowKey(key string) (inventory.RowKey, bool) {
	rest, ok := strings.CutPrefix(key, rowPrefix)
	if !ok {
		return inventory.RowKey{}, false
	}
	parts := strings.Split(rest, separator)
	if len(parts) != 4 {
		return inventory.RowKey{}, false
	}
	return inventory.RowKey{SKU: parts[0], Warehouse: parts[1], Condition: parts[2], Source: parts[3]}, true
}
