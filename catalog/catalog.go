package catalog

import (
	"encoding/binary"
	"strings"
	"unsafe"

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
// saved per record count at a million records. text holds the title and
// then Fold(title), in one allocation, or just the title when folding
// changes nothing; tlen is the title's length. stock is the catalog
// owner's link for the record (inventory: the SKU's stock), which Search's
// callback sets on first use: a pointer kept here instead of a lookup by
// SKU in a map of a million entries per result (SearchLinked). The entry
// stays 64 bytes.
type entry struct {
	sku        string
	text       string
	tlen       uint32
	brand      *brand // shared by the records of one brand (brand.go)
	attributes *[]Attribute
	stock      unsafe.Pointer
}

func (e *entry) title() string { return e.text[len(e.sku) : len(e.sku)+int(e.tlen)] }

// folded is the title folded for search: the title itself, or the text
// after it when folding changed it.
func (e *entry) folded() string {
	end := len(e.sku) + int(e.tlen)
	if end == len(e.text) {
		return e.text[len(e.sku):]
	}
	return e.text[end:]
}

// entryText returns an entry's text: the SKU, the title, and the title
// folded when folding changes it, in one allocation, with the title's
// length. The entry's sku is the text's head: a search hit copies the SKU
// and then the title into its reply from consecutive bytes (one cache miss
// where two separate strings cost two; at 1M records those misses were the
// search's largest cost after its system calls), and a record costs one
// allocation less.
func entryText(sku, title string) (string, uint32) {
	f := Fold(title)
	if f == title {
		return sku + title, uint32(len(title))
	}
	return sku + title + f, uint32(len(title))
}

func (e *entry) record() Record {
	r := Record{SKU: e.sku, Title: e.title(), Brand: e.brand.name}
	if e.attributes != nil {
		r.Attributes = *e.attributes
	}
	return r
}

// indexKey is one key of a title index: (folded title, sku), ordered by
// the folded title's bytes, then the SKU's bytes. pre holds the folded
// title's first 8 bytes (big-endian, zero-padded), so that a seek compares
// most keys, and a walk tests a prefix of up to 8 bytes, without reading
// the entry: a B-tree node's keys sit together in memory, the entries
// they point to do not. A seek key points to an entry with the empty SKU,
// which sorts before every record's key with the same folded title.
type indexKey struct {
	pre uint64
	e   *entry
}

// prefix8 returns s's first 8 bytes as a big-endian number, zero-padded.
// Zero padding keeps the order of strings: no text holds a NUL byte
// (CheckText refuses control characters).
func prefix8(s string) uint64 {
	var b [8]byte
	copy(b[:], s)
	return binary.BigEndian.Uint64(b[:])
}

func keyOf(e *entry) indexKey { return indexKey{pre: prefix8(e.folded()), e: e} }

func indexLess(a, b indexKey) bool {
	if a.pre != b.pre {
		return a.pre < b.pre
	}
	if af, bf := a.e.folded(), b.e.folded(); af != bf {
		return af < bf
	}
	return a.e.sku < b.e.sku
}

// matcher tests whether a key's folded title starts with a folded prefix:
// from pre alone when the prefix has at most 8 bytes.
type matcher struct {
	prefix    string
	pre, mask uint64
}

func newMatcher(prefix string) matcher {
	m := matcher{prefix: prefix}
	if len(prefix) <= 8 {
		m.pre = prefix8(prefix)
		m.mask = ^uint64(0) << (64 - 8*len(prefix))
	}
	return m
}

func (m *matcher) match(k indexKey) bool {
	if m.mask != 0 {
		return k.pre&m.mask == m.pre
	}
	return strings.HasPrefix(k.e.folded(), m.prefix)
}

// seek returns the key to seek to for a folded prefix.
func (m *matcher) seek() indexKey {
	return indexKey{pre: prefix8(m.prefix), e: &entry{text: m.prefix, tlen: uint32(len(m.prefix))}}
}

func skuLess(a, b *entry) bool { return a.sku < b.sku }

// Catalog holds the records and the title index. It is not safe for
// concurrent use: the engine calls it under its own lock, as it does the
// stock state.
//
// B-trees (github.com/google/btree): the title index of (first 8 bytes of
// the folded title, entry) keys, 16 bytes each, so that the walk past a
// prefix of up to 8 bytes reads nothing but the node; the brand indexes
// (brand.go), 24 and 16 bytes a key; and an index by SKU of entry
// pointers, 8 bytes each. 201 bytes per record beyond the record's strings
// at 1M records (BenchmarkSearch1M; 173 before the brand group index).
// Measured there, the alternatives were:
//   - a map by SKU instead of the second tree: 264 bytes per record with a
//     folded brand kept too, about 30 more than the tree, for O(1) instead
//     of O(log n) on Set, Get and Delete, which are not the hot path;
//   - title keys of 8-byte entry pointers: two to five times slower
//     searches (two cache misses per key walked);
//   - title keys holding the folded title's string header (24 bytes): as
//     fast for prefixes of up to 8 bytes, but every seek compared strings
//     out of line;
//   - a sorted slice: less memory, O(n) inserts, which a catalog following
//     a changing table cannot afford.
type Catalog struct {
	bySKU *btree.BTreeG[*entry]
	index *btree.BTreeG[indexKey]
	// The brand indexes and the shared brands (brand.go): the rune
	// index; the group index, groups ordered by folded brand, their trees
	// sharing one free list; the merge plan's scratch.
	byBrandRune   map[rune]*btree.BTreeG[brandKey]
	brandOf       map[string]*brand
	groups        *btree.BTreeG[*brandGroup]
	groupFree     *btree.FreeListG[indexKey]
	groupsScratch []*brandGroup
	cursors       []mergeCursor
	heapScratch   []int32
	// Tests: answer brand queries by the old scan plan, or force a plan.
	scanBrands bool
	brandPlan  brandPlan
	// walked counts the index keys brand queries read (tests and
	// benchmarks: the cost of a plan, without a clock).
	walked int
}

// New returns an empty catalog.
func New() *Catalog {
	return &Catalog{
		bySKU:       btree.NewG[*entry](btreeDegree, skuLess),
		index:       btree.NewG[indexKey](btreeDegree, indexLess),
		byBrandRune: map[rune]*btree.BTreeG[brandKey]{},
		brandOf:     map[string]*brand{},
		groups:      btree.NewG[*brandGroup](btreeDegree, groupLess),
		groupFree:   btree.NewFreeListG[indexKey](btree.DefaultFreeListSize),
	}
}

// Len returns the number of records.
func (c *Catalog) Len() int { return c.bySKU.Len() }

// Set adds or replaces the record r.SKU, after normalizing a copy and
// checking it. It returns "" or a detail of what was wrong, changing
// nothing.
func (c *Catalog) Set(r Record) string { return c.SetLinked(r, nil) }

// SetLinked is Set with the record's link (SearchLinked) set at once.
func (c *Catalog) SetLinked(r Record, link unsafe.Pointer) string {
	r = r.Clone()
	r.Normalize()
	if d := r.Check(); d != "" {
		return d
	}
	c.set(r).stock = link
	return ""
}

func (c *Catalog) set(r Record) *entry {
	e := &entry{brand: c.internBrand(r.Brand)}
	e.text, e.tlen = entryText(r.SKU, r.Title)
	e.sku = e.text[:len(r.SKU)]
	if len(r.Attributes) > 0 {
		// A slice header of its own: &r.Attributes would keep all of r
		// alive, and with it the caller's title, SKU and brand strings
		// (the entry holds its own copies in text and brand).
		attrs := new([]Attribute)
		*attrs = r.Attributes
		e.attributes = attrs
	}
	if old, ok := c.bySKU.ReplaceOrInsert(e); ok {
		k := keyOf(old)
		c.index.Delete(k)
		c.brandDel(k)
		c.releaseBrand(old.brand)
	}
	k := keyOf(e)
	c.index.ReplaceOrInsert(k)
	c.brandAdd(k)
	return e
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
	k := keyOf(e)
	c.index.Delete(k)
	c.brandDel(k)
	c.releaseBrand(e.brand)
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

// prefixTooLong is the detail of a prefix over TextBytesMax.
const prefixTooLong = " is longer than 256 bytes (the limit is on its bytes as sent, before case folding)"

// Check fills the default limit and reports what is wrong with q, or "".
//
// A prefix follows the text rule of the title or brand it is a prefix of:
// 1..256 bytes as sent (DESIGN.md), not as folded. Folding changes a
// length both ways (a KELVIN SIGN's 3 bytes fold to 1, U+023A's 2 to 3),
// so a 256-byte title folds to up to 384 bytes, and a bound of 256 on the
// folded prefix would refuse prefixes that match one. The bound on the
// bytes sent also bounds Fold's work on the prefix. What it refuses that
// could match is a prefix of over 256 bytes that folds shorter (more than
// 85 KELVIN SIGNs), so the detail says the limit is on the bytes sent.
func (q *Query) Check() string {
	if q.Limit == 0 {
		q.Limit = LimitDefault
	}
	if len(q.Prefix) > TextBytesMax {
		return "prefix" + prefixTooLong
	}
	if d := CheckText(q.Prefix, TextBytesMax); d != "" {
		return "prefix " + d
	}
	if q.Brand != "" {
		if len(q.Brand) > TextBytesMax {
			return "brand prefix" + prefixTooLong
		}
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
	if available == nil {
		return c.SearchLinked(q, nil, out)
	}
	return c.SearchLinked(q, func(sku string, _ *unsafe.Pointer) int64 { return available(sku) }, out)
}

// SearchLinked is Search whose available callback also gets the record's
// link: a pointer the callback may set (to what it looked up by SKU) and
// finds again on the record's next result. The catalog never reads it; a
// record set again starts with a nil link. Like every Catalog method it
// must not run concurrently with another.
func (c *Catalog) SearchLinked(q Query, available func(sku string, link *unsafe.Pointer) int64, out []Result) ([]Result, string) {
	if d := q.Check(); d != "" {
		return out, d
	}
	prefix := Fold(q.Prefix)
	brandPrefix := ""
	if q.Brand != "" {
		brandPrefix = Fold(q.Brand)
	}
	skip, left := q.Offset, q.Limit
	emit := func(k indexKey) bool {
		if skip > 0 {
			skip--
			return true
		}
		e := k.e
		var n int64
		if available != nil {
			n = available(e.sku, &e.stock)
		}
		out = append(out, Result{SKU: e.sku, Title: e.title(), Brand: e.brand.name, Available: n})
		left--
		return left > 0
	}
	m := newMatcher(prefix)
	if brandPrefix == "" {
		c.index.AscendGreaterOrEqual(m.seek(), func(k indexKey) bool {
			if !m.match(k) {
				return false // the first key past the prefix: stop
			}
			return emit(k)
		})
		return out, ""
	}
	if c.scanBrands {
		c.scanBrand(&m, brandPrefix, emit)
	} else {
		c.searchBrand(&m, brandPrefix, q.Offset+q.Limit, emit)
	}
	return out, ""
}
