package catalog

import (
	"strings"
	"unicode/utf8"

	"github.com/google/btree"
)

// Brands, and the indexes that serve a query with a brand prefix.
//
// A brand is shared by many records (a shop has hundreds or thousands of
// brands for a million products), so each distinct brand is kept once, in
// a brand struct the records point to, with its folded form: an entry
// holds an 8-byte pointer instead of a 16-byte string header, and a brand
// check never folds.
//
// Two indexes serve brand queries, each a title index (the same (folded
// title, SKU) order as the catalog's):
//
//   - the rune index: one tree per first folded rune of the brand, each
//     key also holding the folded brand's first 8 bytes. A one-rune brand
//     prefix (the common typed case) walks the one tree of its rune from
//     the title prefix, every key a match: O(log n + offset + limit), as a
//     title-only query.
//   - the group index: one tree per folded brand (a brandGroup, shared by
//     the brands that fold alike, "ACME" and "Acme"), the groups kept in a
//     tree ordered by folded brand. A longer brand prefix seeks the groups
//     that start with it: none, and the query is answered at once; one,
//     and its tree is walked from the title prefix; a few, and their trees
//     are merged in title order. The keys read are then the matches (and
//     the offset) plus a seek per group, whatever the title range holds.
//
// A longer prefix that selects many groups (more than mergeGroupsFew)
// walks the rune tree instead, testing each key's brand, when that is
// expected to read fewer keys (mergeCheaper): when the groups it selects
// hold most of the rune's records, a merge would seek every group to
// emit what the walk finds next to each other.
//
// The group index costs one 16-byte key per record in a second set of
// trees, and a tree per distinct folded brand: 28 bytes a record at 1M
// records and 500 brands, B-tree slack included (BenchmarkBrandSearch1M
// and BenchmarkSearch1M: 173 bytes a record beyond its strings before it,
// 201 with it).
//
// Alternatives measured with BenchmarkCatalogQueries (bench/search) and
// BenchmarkBrandSearch1M at 1M records and 500 brands:
//   - walking the title index and testing each record's brand: every
//     record of the title prefix is read when the brand is rare, 0.2 ms a
//     query on average and up to 8 ms;
//   - the rune index alone: a longer prefix read the records of every
//     other brand with its first letter in the title range: for a rare
//     brand 1,640 keys a query on average and up to 49,477 (an audit
//     measured 22 ms for one query on the writer), 1,672 for a prefix no
//     brand has; with the group index, 92 and 797, and none;
//   - the group index alone: a one-letter prefix merges dozens of groups,
//     one seek each, 0.08 to 0.15 ms a query.

// Bounds of the merge plan.
const (
	// mergeGroupsFew: a brand prefix that selects at most this many groups
	// is always answered by merging them.
	mergeGroupsFew = 8
	// mergeGroupsMax: one that selects more is always answered by the
	// rune tree; in between, mergeCheaper decides.
	mergeGroupsMax = 64
	// mergeSeekKeys is what a group's seek and first batch cost the merge,
	// in keys read (mergeCheaper's estimate).
	mergeSeekKeys = 32
	// A cursor fetches its group's keys in batches, from mergeBatchMin
	// doubling to mergeBatchMax: a group whose keys are not needed costs
	// one small batch, and one that is costs few seeks.
	mergeBatchMin = 16
	mergeBatchMax = 256
)

// brand is one distinct brand string, shared by the records that carry it.
type brand struct {
	name, folded string
	pre          uint64      // prefix8(folded)
	refs         int         // records that carry it
	group        *brandGroup // the records of every brand that folds alike
}

// brandGroup is the records whose brand folds to folded, in a title
// index. It is in the catalog's group tree exactly while it holds a record.
type brandGroup struct {
	folded string
	titles *btree.BTreeG[indexKey]
}

func groupLess(a, b *brandGroup) bool { return a.folded < b.folded }

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
		b = &brand{name: name, folded: f, pre: prefix8(f), group: c.groupOf(f)}
		c.brandOf[name] = b
	}
	b.refs++
	return b
}

// groupOf returns the group of a folded brand: the one in the group tree,
// or a new one, which brandAdd puts there with its first record.
func (c *Catalog) groupOf(folded string) *brandGroup {
	probe := brandGroup{folded: folded}
	if g, ok := c.groups.Get(&probe); ok {
		return g
	}
	return &brandGroup{folded: folded, titles: btree.NewWithFreeListG(btreeDegree, indexLess, c.groupFree)}
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

// brandAdd and brandDel keep the brand indexes in step with the title
// index; an emptied tree is dropped, and an emptied group leaves the group
// tree (a brand that keeps it puts it back with its next record: Set
// interns the new record's brand before it removes the old record).
func (c *Catalog) brandAdd(k indexKey) {
	b := k.e.brand
	r := firstRune(b.folded)
	t := c.byBrandRune[r]
	if t == nil {
		t = btree.NewG[brandKey](btreeDegree, brandKeyLess)
		c.byBrandRune[r] = t
	}
	t.ReplaceOrInsert(brandKey{indexKey: k, brandPre: b.pre})
	g := b.group
	if g.titles.Len() == 0 {
		c.groups.ReplaceOrInsert(g)
	}
	g.titles.ReplaceOrInsert(k)
}

func (c *Catalog) brandDel(k indexKey) {
	b := k.e.brand
	r := firstRune(b.folded)
	if t := c.byBrandRune[r]; t != nil {
		t.Delete(brandKey{indexKey: k})
		if t.Len() == 0 {
			delete(c.byBrandRune, r)
		}
	}
	g := b.group
	if _, ok := g.titles.Delete(k); ok && g.titles.Len() == 0 {
		c.groups.Delete(g)
	}
}

// brandPlan names a plan for a brand query; tests force each one.
type brandPlan uint8

const (
	planAuto  brandPlan = iota
	planRune            // walk the rune tree
	planMerge           // merge the selected groups' trees
)

// searchBrand emits, in title index order, the keys of the title prefix
// whose folded brand starts with folded, until emit returns false; want
// is how many emit may take (offset + limit), for the choice of plan.
func (c *Catalog) searchBrand(m *matcher, folded string, want int, emit func(indexKey) bool) {
	r, size := utf8.DecodeRuneInString(folded)
	t := c.byBrandRune[r]
	if t == nil {
		return
	}
	plan := c.brandPlan
	if plan == planAuto && size == len(folded) {
		plan = planRune // every key of the rune's tree has the prefix
	}
	if plan == planRune {
		c.walkRune(t, m, folded, emit)
		return
	}
	max := mergeGroupsMax
	if plan == planMerge {
		max = c.groups.Len()
	}
	groups := c.groupsWithPrefix(folded, max+1)
	switch {
	case len(groups) == 0:
		return
	case plan == planAuto && len(groups) > mergeGroupsFew && !mergeCheaper(groups, t.Len(), want):
		c.walkRune(t, m, folded, emit)
	case len(groups) == 1:
		groups[0].titles.AscendGreaterOrEqual(m.seek(), func(k indexKey) bool {
			c.walked++
			return m.match(k) && emit(k)
		})
	default:
		c.merge(groups, m, emit)
	}
}

// groupsWithPrefix returns up to n groups whose folded brand starts with
// folded, in the catalog's scratch slice.
func (c *Catalog) groupsWithPrefix(folded string, n int) []*brandGroup {
	out := c.groupsScratch[:0]
	probe := brandGroup{folded: folded}
	c.groups.AscendGreaterOrEqual(&probe, func(g *brandGroup) bool {
		if !strings.HasPrefix(g.folded, folded) || len(out) == n {
			return false
		}
		out = append(out, g)
		return true
	})
	c.groupsScratch = out[:0]
	return out
}

// mergeCheaper reports whether merging groups is expected to read fewer
// keys than walking their rune's tree of runeLen keys, for want results:
// the walk reads about want·runeLen/selected keys (the selected groups'
// records are spread over the title order like the others), the merge
// want keys and mergeSeekKeys per group.
func mergeCheaper(groups []*brandGroup, runeLen, want int) bool {
	if len(groups) > mergeGroupsMax {
		return false
	}
	selected := 0
	for _, g := range groups {
		selected += g.titles.Len()
	}
	return int64(want)*int64(runeLen) >= int64(selected)*int64(want+len(groups)*mergeSeekKeys)
}

// walkRune walks the rune tree t from the title prefix, emitting the keys
// whose brand starts with folded.
func (c *Catalog) walkRune(t *btree.BTreeG[brandKey], m *matcher, folded string, emit func(indexKey) bool) {
	bm := newMatcher(folded)
	t.AscendGreaterOrEqual(brandKey{indexKey: m.seek()}, func(k brandKey) bool {
		c.walked++
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

// mergeCursor reads one group's keys of the title prefix in batches:
// keys[i:] are fetched and not yet emitted. The cursors are the catalog's
// scratch, reused by the next merge so that a query allocates none; until
// then their keys may keep up to mergeGroupsMax·mergeBatchMax entries
// reachable after a Delete (about a megabyte at most).
type mergeCursor struct {
	titles *btree.BTreeG[indexKey]
	keys   []indexKey
	i      int
	batch  int  // the next fetch's size
	done   bool // no key of the prefix past keys
}

// fetch reads the cursor's next batch from from, or after it.
func (c *Catalog) fetch(cur *mergeCursor, m *matcher, from indexKey, after bool) {
	cur.keys, cur.i = cur.keys[:0], 0
	cur.titles.AscendGreaterOrEqual(from, func(k indexKey) bool {
		c.walked++
		if after && k.e == from.e {
			return true
		}
		if !m.match(k) {
			cur.done = true
			return false
		}
		cur.keys = append(cur.keys, k)
		return len(cur.keys) < cur.batch
	})
	if len(cur.keys) < cur.batch {
		cur.done = true
	}
	cur.batch = min(2*cur.batch, mergeBatchMax)
}

// merge emits the keys of the title prefix of groups' trees in title index
// order (a k-way merge: a binary heap of cursors by their next key) until
// emit returns false or every tree is past the prefix.
func (c *Catalog) merge(groups []*brandGroup, m *matcher, emit func(indexKey) bool) {
	if cap(c.cursors) < len(groups) {
		c.cursors = make([]mergeCursor, len(groups))
	}
	cursors := c.cursors[:len(groups)]
	heap := c.heapScratch[:0]
	seek := m.seek()
	for i, g := range groups {
		cur := &cursors[i]
		*cur = mergeCursor{titles: g.titles, keys: cur.keys, batch: mergeBatchMin}
		c.fetch(cur, m, seek, false)
		if len(cur.keys) > 0 {
			heap = append(heap, int32(i))
		}
	}
	head := func(h int) indexKey { cur := &cursors[heap[h]]; return cur.keys[cur.i] }
	down := func(h int) {
		for {
			l := 2*h + 1
			if l >= len(heap) {
				return
			}
			if r := l + 1; r < len(heap) && indexLess(head(r), head(l)) {
				l = r
			}
			if !indexLess(head(l), head(h)) {
				return
			}
			heap[h], heap[l] = heap[l], heap[h]
			h = l
		}
	}
	for h := len(heap)/2 - 1; h >= 0; h-- {
		down(h)
	}
	for len(heap) > 0 {
		cur := &cursors[heap[0]]
		k := cur.keys[cur.i]
		cur.i++
		if !emit(k) {
			break
		}
		if cur.i == len(cur.keys) {
			if !cur.done {
				c.fetch(cur, m, k, true)
			}
			if cur.i == len(cur.keys) {
				heap[0] = heap[len(heap)-1]
				heap = heap[:len(heap)-1]
			}
		}
		down(0)
	}
	for i := range cursors {
		cursors[i].titles = nil
	}
	c.heapScratch = heap[:0]
}

// scanBrand is the plan the catalog had before the brand indexes: walk the
// title index and test each record's brand. Tests hold every plan to the
// same reference.
func (c *Catalog) scanBrand(m *matcher, folded string, emit func(indexKey) bool) {
	c.index.AscendGreaterOrEqual(m.seek(), func(k indexKey) bool {
		c.walked++
		if !m.match(k) {
			return false
		}
		if !strings.HasPrefix(k.e.brand.folded, folded) {
			return true
		}
		return emit(k)
	})
}
