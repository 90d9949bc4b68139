package catalog

import (
	"strings"

	"github.com/google/btree"
)

// Search bounds (DESIGN.md, "Catalog and search").
const (
	OffsetMax    = 100000
	LimitDefault = 20
	LimitMax     = 1000
)

// btreeDegree is the B-trees' minimum degree: nodes hold 31..63 keys.
// Measured with BenchmarkSearch1M: 16 and 64 were within noise of 32.
const btreeDegree = 32

// entry is one record as the catalog keeps it. Attributes sit behind a
// pointer, nil for none: most records have few or none, and the 16 bytes
// saved per record count at a million records.
type entry struct {
	sku, title, brand string
	attributes        *[]Attribute
}

func (e *entry) record() Record {
	r := Record{SKU: e.sku, Title: e.title, Brand: e.brand}
	if e.attributes != nil {
		r.Attributes = *e.attributes
	}
	return r
}

// indexKey is one key of the title index: (folded title, sku), ordered by
// the folded title's bytes, then the SKU's bytes. The folded title is the
// record's own title string when folding changes nothing. A seek key has
// e == nil and sorts before every key with its folded title (it stands for
// the empty SKU, which no record has).
type indexKey struct {
	folded string
	e      *entry
}

func indexLess(a, b indexKey) bool {
	if a.folded != b.folded {
		return a.folded < b.folded
	}
	if a.e == nil || b.e == nil {
		return a.e == nil && b.e != nil
	}
	return a.e.sku < b.e.sku
}

func skuLess(a, b *entry) bool { return a.sku < b.sku }

// Catalog holds the records and the title index. It is not safe for
// concurrent use: the engine calls it under its own lock, as it does the
// stock state.
//
// Two B-trees (github.com/google/btree): the title index of (folded title,
// entry) keys, 24 bytes each, so that the walk past a prefix reads the
// folded title from the node without touching the entry; and an index by
// SKU of entry pointers, 8 bytes each. Measured at 1M records
// (BenchmarkSearch1M), the alternatives were:
//   - a map by SKU instead of the second tree: 264 bytes per record with a
//     folded brand kept too, about 30 more than the tree, for O(1) instead
//     of O(log n) on Set, Get and Delete, which are not the hot path;
//   - title keys of 8-byte entry pointers: 193 bytes per record but two
//     to five times slower searches (two cache misses per key walked);
//   - a sorted slice: less memory, O(n) inserts, which a catalog following
//     a changing table cannot afford.
type Catalog struct {
	bySKU *btree.BTreeG[*entry]
	index *btree.BTreeG[indexKey]
}

// New returns an empty catalog.
func New() *Catalog {
	return &Catalog{
		bySKU: btree.NewG[*entry](btreeDegree, skuLess),
		index: btree.NewG[indexKey](btreeDegree, indexLess),
	}
}

// Len returns the number of records.
func (c *Catalog) Len() int { return c.bySKU.Len() }

// Set adds or replaces the record r.SKU, after normalizing a copy and
// checking it. It returns "" or a detail of what was wrong, changing
// nothing.
func (c *Catalog) Set(r Record) string {
	r = r.Clone()
	r.Normalize()
	if d := r.Check(); d != "" {
		return d
	}
	c.set(r)
	return ""
}

func (c *Catalog) set(r Record) {
	e := &entry{sku: r.SKU, title: r.Title, brand: r.Brand}
	if len(r.Attributes) > 0 {
		e.attributes = &r.Attributes
	}
	if old, ok := c.bySKU.ReplaceOrInsert(e); ok {
		c.index.Delete(indexKey{folded: Fold(old.title), e: old})
	}
	c.index.ReplaceOrInsert(indexKey{folded: Fold(e.title), e: e})
}

func (c *Catalog) lookup(sku string) (*entry, bool) {
	return c.bySKU.Get(&entry{sku: sku})
}

// Get returns the record of sku.
func (c *Catalog) Get(sku string) (Record, bool) {
	e, ok := c.lookup(sku)
	if !ok {
		return Record{}, false
	}
	return e.record(), true
}

// Delete removes the record of sku and reports whether there was one.
func (c *Catalog) Delete(sku string) bool {
	e, ok := c.bySKU.Delete(&entry{sku: sku})
	if !ok {
		return false
	}
	c.index.Delete(indexKey{folded: Fold(e.title), e: e})
	return true
}

// Each calls fn for every record in index order (folded title, then SKU)
// until fn returns false.
func (c *Catalog) Each(fn func(r *Record) bool) {
	c.index.Ascend(func(k indexKey) bool {
		r := k.e.record()
		return fn(&r)
	})
}

// Query is one search. Prefix is required; Brand may be empty (no brand
// filter).
type Query struct {
	Prefix string
	Brand  string
	Offset int
	Limit  int
}

// Check fills the default limit and reports what is wrong with q, or "".
func (q *Query) Check() string {
	if q.Limit == 0 {
		q.Limit = LimitDefault
	}
	if d := CheckText(q.Prefix, TextBytesMax); d != "" {
		return "prefix " + d
	}
	if q.Brand != "" {
		if d := CheckText(q.Brand, TextBytesMax); d != "" {
			return "brand prefix " + d
		}
	}
	if q.Offset < 0 || q.Offset > OffsetMax {
		return "offset must be from 0 to 100000"
	}
	if q.Limit < 1 || q.Limit > LimitMax {
		return "limit must be from 1 to 1000"
	}
	return ""
}

// Result is one search hit.
type Result struct {
	SKU       string
	Title     string
	Brand     string
	Available int64
}

// Search appends to out the records matching q, in index order, skipping
// q.Offset matches and returning at most q.Limit; available gives each
// result's available units (nil means 0). It returns a detail instead when
// q is invalid (Query.Check), appending nothing.
func (c *Catalog) Search(q Query, available func(sku string) int64, out []Result) ([]Result, string) {
	if d := q.Check(); d != "" {
		return out, d
	}
	prefix := Fold(q.Prefix)
	brand := ""
	if q.Brand != "" {
		brand = Fold(q.Brand)
	}
	skip, left := q.Offset, q.Limit
	c.index.AscendGreaterOrEqual(indexKey{folded: prefix}, func(k indexKey) bool {
		if !strings.HasPrefix(k.folded, prefix) {
			return false // the first key past the prefix: stop
		}
		e := k.e
		if brand != "" && !HasFoldedPrefix(e.brand, brand) {
			return true
		}
		if skip > 0 {
			skip--
			return true
		}
		var n int64
		if available != nil {
			n = available(e.sku)
		}
		out = append(out, Result{SKU: e.sku, Title: e.title, Brand: e.brand, Available: n})
		left--
		return left > 0
	})
	return out, ""
}
