package inventory

import (
	"fmt"
	"math"
	"unsafe"

	"allot/catalog"
)

// The catalog kept beside the rows (package catalog): four op kinds and one
// snapshot section. catalog.set and catalog.del are journaled like stock
// ops and take idempotency keys; catalog.get and search are reads.
const (
	// KindCatalogSet adds or replaces the record Op.Record.
	KindCatalogSet Kind = 12
	// KindCatalogDel removes the record of Op.Key.SKU; Result.Count is 1
	// when there was one, 0 when not (and nothing changed).
	KindCatalogDel Kind = 13
	// KindCatalogGet reads the record of Op.Key.SKU into Result.Record, or
	// CodeNotFound.
	KindCatalogGet Kind = 14
	// KindSearch runs Op.Query; Result.Hits holds the results, each with
	// its SKU's available units over all its rows.
	KindSearch Kind = 15
)

// SectionCatalog is the snapshot section of the catalog's records.
const SectionCatalog byte = 5

// CatalogSet returns the op that sets a copy of r: checking the op sorts
// its attributes in place (Record.Normalize), which must not reorder the
// caller's slice, nor race with another op built from the same record.
func CatalogSet(r catalog.Record) Op {
	r = r.Clone()
	return Op{Kind: KindCatalogSet, Record: &r}
}

// CatalogDel returns the op that deletes the record of sku.
func CatalogDel(sku string) Op { return Op{Kind: KindCatalogDel, Key: RowKey{SKU: sku}} }

// CatalogGet returns the op that reads the record of sku.
func CatalogGet(sku string) Op { return Op{Kind: KindCatalogGet, Key: RowKey{SKU: sku}} }

// Search returns the op that runs q.
func Search(q catalog.Query) Op { return Op{Kind: KindSearch, Query: &q} }

func (s *State) catalogOrNew() *catalog.Catalog {
	if s.catalog == nil {
		s.catalog = catalog.New()
	}
	return s.catalog
}

// SKUAvailable returns a SKU's units over all its rows (every condition
// and source), saturated at math.MaxInt64; 0 for a SKU without rows. It
// is what each search result carries.
func (s *State) SKUAvailable(sku string) int64 {
	return skuAvailable(s.skus[sku])
}

// skuAvailable sums the groups of a SKU from its first, saturated at
// MaxInt64 (0 for none).
func skuAvailable(g *group) int64 {
	var total int64
	for ; g != nil; g = g.nextInSKU {
		n := g.available()
		if total > math.MaxInt64-n {
			return math.MaxInt64
		}
		total += n
	}
	return total
}

// linkedAvailable is SKUAvailable through a catalog record's link
// (catalog.SearchLinked): the SKU's first group, looked up on the
// record's first result that finds one.
func (s *State) linkedAvailable(sku string, link *unsafe.Pointer) int64 {
	g := (*group)(*link)
	if g == nil {
		if g = s.skus[sku]; g == nil {
			return 0
		}
		*link = unsafe.Pointer(g)
	}
	return skuAvailable(g)
}

// CatalogLen returns the number of catalog records.
func (s *State) CatalogLen() int {
	if s.catalog == nil {
		return 0
	}
	return s.catalog.Len()
}

// CatalogRecords returns every record in index order (folded title, SKU).
func (s *State) CatalogRecords() []catalog.Record {
	var out []catalog.Record
	if s.catalog != nil {
		s.catalog.Each(func(r *catalog.Record) bool {
			out = append(out, r.Clone())
			return true
		})
	}
	return out
}

func (s *State) appendCatalog(dst []byte) []byte {
	if s.catalog == nil {
		return catalog.New().AppendSnapshot(dst)
	}
	return s.catalog.AppendSnapshot(dst)
}

// freezeCatalog returns the catalog section's encoder as of now: the
// catalog's index cloned, copy on write, in O(1).
func (s *State) freezeCatalog(*Frozen) func([]byte) []byte {
	c := s.catalog
	if c == nil {
		c = catalog.New()
	}
	return c.Freeze().AppendSnapshot
}

func (s *State) loadCatalog(b []byte) error {
	c, rest, err := catalog.DecodeSnapshot(b)
	if err != nil {
		return err
	}
	if len(rest) != 0 {
		return fmt.Errorf("%w: %d bytes after the last record", catalog.ErrCorrupt, len(rest))
	}
	s.catalog = c
	return nil
}

func checkCatalogSKU(op *Op) string {
	if d := CheckID(op.Key.SKU); d != "" {
		return "sku " + d
	}
	return ""
}

func init() {
	DefineSection(SectionCatalog, (*State).appendCatalog, (*State).loadCatalog, (*State).freezeCatalog)
	define(KindCatalogSet, &descriptor{
		name: "catalog.set", mutates: true, keyed: true, since: 2,
		check: func(op *Op) string {
			if op.Record == nil {
				return "catalog.set without a record"
			}
			// Attribute order carries no meaning: sorting here makes the
			// journaled form and an idempotency key's fingerprint
			// canonical.
			op.Record.Normalize()
			return op.Record.Check()
		},
		apply: func(s *State, op *Op, res *Result) {
			// The record links to its SKU's stock now when there is some,
			// else on its first search result (linkedAvailable).
			if d := s.catalogOrNew().SetLinked(*op.Record, unsafe.Pointer(s.skus[op.Record.SKU])); d != "" {
				res.Code, res.Detail = CodeInvalid, d
				return
			}
			res.Changed = true
		},
		encode: func(dst []byte, op *Op) []byte { return catalog.AppendRecord(dst, op.Record) },
		decode: func(d *Decoder, op *Op) error {
			r, rest, err := catalog.DecodeRecord(d.buf[d.pos:])
			if err != nil {
				return err
			}
			d.pos = len(d.buf) - len(rest)
			op.Record = &r
			return nil
		},
	})
	define(KindCatalogDel, &descriptor{
		name: "catalog.del", mutates: true, keyed: true, since: 2,
		check: checkCatalogSKU,
		apply: func(s *State, op *Op, res *Result) {
			if s.catalog != nil && s.catalog.Delete(op.Key.SKU) {
				res.Count, res.Changed = 1, true
			}
		},
		encode: func(dst []byte, op *Op) []byte { return AppendString(dst, op.Key.SKU) },
		decode: func(d *Decoder, op *Op) error { return d.strings(&op.Key.SKU) },
	})
	define(KindCatalogGet, &descriptor{
		name:  "catalog.get",
		check: checkCatalogSKU,
		apply: func(s *State, op *Op, res *Result) {
			if s.catalog == nil {
				res.Code = CodeNotFound
				return
			}
			r, ok := s.catalog.Get(op.Key.SKU)
			if !ok {
				res.Code = CodeNotFound
				return
			}
			r = r.Clone()
			res.Record = &r
		},
	})
	define(KindSearch, &descriptor{
		name: "search",
		check: func(op *Op) string {
			if op.Query == nil {
				return "search without a query"
			}
			return op.Query.Check()
		},
		apply: func(s *State, op *Op, res *Result) {
			if s.catalog == nil {
				return
			}
			out := s.hitsOut[:0]
			s.hitsOut = nil // lent for one reply
			if out == nil {
				out = make([]catalog.Result, 0, min(op.Query.Limit, 64))
			}
			hits, d := s.catalog.SearchLinked(*op.Query, s.linkedAvailable, out)
			if d != "" {
				res.Code, res.Detail = CodeInvalid, d
				return
			}
			res.Hits = hits
		},
	})
}
