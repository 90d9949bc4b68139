package redis

import "allot/inventory"

// KeyPrefix starts every key of the adapter; Load removes every key that
// starts with it. Adapters that keep their own keys beside the rows (the
// dtm store's branch records) put them under it.
const KeyPrefix = keyPrefix

// GroupKeys returns the keys of group g as capture.lua uses them: the
// group's warehouse index (a sorted set of warehouse ids) and the parts of
// a row key before and after the warehouse. Other adapters' scripts over
// the same rows (the dtm store's saga branches) build row keys from them.
func GroupKeys(g inventory.GroupKey) (index, rowBefore, rowAfter string) {
	rowBefore, rowAfter = rowKeyAround(g)
	return groupKey(g), rowBefore, rowAfter
}
