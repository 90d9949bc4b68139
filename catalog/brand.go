package catalog

import (
	"strings"
	"unicode/utf8"

	"github.com/google/btree"
)

// Brands, and the index that serves a query with a brand prefix.
//
// A brand is shared by many records (a shop has hundreds or thousands of
// brands for a million products), so each distinct brand is kept once, in
// a brand struct the records point to, with its folded form: an entry
// holds an 8-byte pointer instead of a 16-byte string header, and a brand
// check never folds.
//
// The brand index is a title index per first folded rune of the brand:
// the same (folded title, SKU) order as the catalog's title index, each key
// also holding the folded brand's first 8 bytes. A query with a brand
// prefix walks the one tree of its first rune from the title prefix, and
// tests the brand from the key alone when the brand prefix has at most 8
// bytes: a one-rune brand prefix (the common typed case) costs
// O(log n + offset + limit), as a title-only query does; a longer one
// skips, in that tree only, the records of other brands with the same
// first letter. Alternatives measured with BenchmarkCatalogQueries
// (bench/search) at 1M records and 500 brands:
//   - walking the title index and testing each record's brand: every
//     record of the title prefix is read when the brand is rare, 0.2 ms a
//     query on average and up to 8 ms;
//   - a title index per brand, merged over every brand that starts with
//     the prefix: one seek per matching brand (dozens for a one-letter
//     prefix), 0.08 to 0.15 ms a query.

// brand is one distinct brand string, shared by the records that carry it.
type brand struct {
	name, folded string
	pre          uint64 // prefix8(folded)
	refs         int    // records that carry it
}

// brandKey is a key of a brand index: a title index key plus the folded
// brand's first 8 bytes.
type brandKey struct {
	indexKey
	brandPre uint64
}

func brandKeyLess(a, b brandKey) bool { return indexLess(a.indexKey, b.indexKey) }

// internBrand returns the shared brand for name, counting one more record.
func (c *Catalog) internBrand(name string) *brand {
	b := c.brandOf[name]
	if b == nil {
		f := Fold(name)
		b = &brand{name: name, folded: f, pre: prefix8(f)}
		c.brandOf[name] = b
	}
	b.refs++
	return b
}

// releaseBrand counts one record fewer for b, dropping it at zero.
func (c *Catalog) releaseBrand(b *brand) {
	b.refs--
	if b.refs == 0 {
		delete(c.brandOf, b.name)
	}
}

func firstRune(folded string) rune {
	r, _ := utf8.DecodeRuneInString(folded)
	return r
}

// brandAdd and brandDel keep the brand index in step with the title
// index; an emptied tree is dropped.
func (c *Catalog) brandAdd(k indexKey) {
	b := k.e.brand
	r := firstRune(b.folded)
	t := c.byBrandRune[r]
	if t == nil {
		t = btree.NewG[brandKey](btreeDegree, brandKeyLess)
		c.byBrandRune[r] = t
	}
	t.ReplaceOrInsert(brandKey{indexKey: k, brandPre: b.pre})
}

func (c *Catalog) brandDel(k indexKey) {
	r := firstRune(k.e.brand.folded)
	t := c.byBrandRune[r]
	if t == nil {
		return
	}
	t.Delete(brandKey{indexKey: k})
	if t.Len() == 0 {
		delete(c.byBrandRune, r)
	}
}

// searchBrand walks the brand index of the folded brand prefix's first
// rune from the title prefix, emitting the keys whose brand starts with
// it, until emit returns false.
func (c *Catalog) searchBrand(m *matcher, folded string, emit func(indexKey) bool) {
	t := c.byBrandRune[firstRune(folded)]
	if t == nil {
		return
	}
	bm := newMatcher(folded)
	t.AscendGreaterOrEqual(brandKey{indexKey: m.seek()}, func(k brandKey) bool {
		if !m.match(k.indexKey) {
			return false // the first key past the title prefix: stop
		}
		if bm.mask != 0 {
			if k.brandPre&bm.mask != bm.pre {
				return true
			}
		} else if !strings.HasPrefix(k.e.brand.folded, folded) {
			return true
		}
		return emit(k.indexKey)
	})
}

// scanBrand is the plan the catalog had before the brand index: walk the
// title index and test each record's brand. Tests hold both plans to the
// same reference.
func (c *Catalog) scanBrand(m *matcher, folded string, emit func(indexKey) bool) {
	c.index.AscendGreaterOrEqual(m.seek(), func(k indexKey) bool {
		if !m.match(k) {
			return false
		}
		if !strings.HasPrefix(k.e.brand.folded, folded) {
			return true
		}
		return emit(k)
	})
}
