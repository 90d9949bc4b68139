package search

import (
	"slices"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"allot/catalog"
	"allot/inventory"
	"allot/store"
)

// Reference answers the workload's queries from DESIGN.md's catalog and
// search contract alone: its own case folding (foldReference), the
// records sorted once by (folded title, SKU), and each query answered by
// a plain walk over them, the brand tested on every title that matches.
// It shares nothing with package catalog but the data types (Record,
// Query, Result).
//
// The check compares every store with it, allot included. It was package
// catalog itself until a reference independent of it was written: a
// folding or ordering bug there made allot's answers and the reference
// agree, both wrong against the contract, and the check passed them.
//
// The walk starts at the first folded title not below the folded prefix
// (a binary search): in byte order every title with the prefix lies in
// one run from there, so this is the answer of a walk from the first
// record, without reading the records before the run (at a million
// records and a thousand checked queries, a walk from the first record
// read a billion of them). The tests hold it to a walk from the first
// record too.
type Reference struct {
	fold func(string) string
	// records sorted by folded title bytes, then SKU bytes; a SKU given
	// twice keeps its last record, as a catalog set does.
	records []referenceRecord
	units   map[string]int64
}

type referenceRecord struct {
	sku, title, brand        string
	foldedTitle, foldedBrand string
}

// Contract bounds (DESIGN.md, "Catalog and search"), written here rather
// than taken from package catalog, for the same reason as the folding.
const (
	referenceTextBytesMax = 256
	referenceSKUBytesMax  = 64
	referenceOffsetMax    = 100000
	referenceLimitDefault = 20
	referenceLimitMax     = 1000
)

// NewReference returns the reference for the catalog recs over the stock
// rows, or a detail naming the first record that breaks the contract's
// rules.
func NewReference(recs []catalog.Record, rows []inventory.Row) (*Reference, string) {
	return newReference(recs, rows, foldReference)
}

// newReference is NewReference with another folding: the tests' broken
// variants.
func newReference(recs []catalog.Record, rows []inventory.Row, fold func(string) string) (*Reference, string) {
	ref := &Reference{fold: fold}
	at := make(map[string]int, len(recs))
	for i := range recs {
		r := &recs[i]
		if d := referenceText(r.SKU, referenceSKUBytesMax); d != "" {
			return nil, "record " + r.SKU + ": sku " + d
		}
		if d := referenceText(r.Title, referenceTextBytesMax); d != "" {
			return nil, "record " + r.SKU + ": title " + d
		}
		if d := referenceText(r.Brand, referenceTextBytesMax); d != "" {
			return nil, "record " + r.SKU + ": brand " + d
		}
		rec := referenceRecord{sku: r.SKU, title: r.Title, brand: r.Brand, foldedTitle: fold(r.Title), foldedBrand: fold(r.Brand)}
		if j, ok := at[r.SKU]; ok {
			ref.records[j] = rec
			continue
		}
		at[r.SKU] = len(ref.records)
		ref.records = append(ref.records, rec)
	}
	slices.SortFunc(ref.records, func(a, b referenceRecord) int {
		if c := strings.Compare(a.foldedTitle, b.foldedTitle); c != 0 {
			return c
		}
		return strings.Compare(a.sku, b.sku)
	})
	// A result's available is its SKU's units over all its rows, summed
	// as the engine sums them (saturated).
	ref.units = store.SKUUnits(rows)
	return ref, ""
}

// Search returns q's answer, or a detail of what makes q invalid.
func (ref *Reference) Search(q catalog.Query) ([]catalog.Result, string) {
	if q.Limit == 0 {
		q.Limit = referenceLimitDefault
	}
	if d := referenceText(q.Prefix, referenceTextBytesMax); d != "" {
		return nil, "prefix " + d
	}
	if q.Brand != "" {
		if d := referenceText(q.Brand, referenceTextBytesMax); d != "" {
			return nil, "brand prefix " + d
		}
	}
	if q.Offset < 0 || q.Offset > referenceOffsetMax {
		return nil, "offset must be from 0 to 100000"
	}
	if q.Limit < 1 || q.Limit > referenceLimitMax {
		return nil, "limit must be from 1 to 1000"
	}
	prefix, brand := ref.fold(q.Prefix), ref.fold(q.Brand)
	i := sort.Search(len(ref.records), func(i int) bool { return ref.records[i].foldedTitle >= prefix })
	out := []catalog.Result{}
	skip := q.Offset
	for ; i < len(ref.records) && len(out) < q.Limit; i++ {
		r := &ref.records[i]
		if !strings.HasPrefix(r.foldedTitle, prefix) {
			break
		}
		if q.Brand != "" && !strings.HasPrefix(r.foldedBrand, brand) {
			continue
		}
		if skip > 0 {
			skip--
			continue
		}
		out = append(out, catalog.Result{SKU: r.sku, Title: r.title, Brand: r.brand, Available: ref.units[r.sku]})
	}
	return out, ""
}

// referenceText checks the contract's text rule: 1..max bytes of UTF-8
// without control characters.
func referenceText(s string, max int) string {
	switch {
	case s == "":
		return "is empty"
	case len(s) > max:
		return "is too long"
	case !utf8.ValidString(s):
		return "is not valid UTF-8"
	case strings.IndexFunc(s, unicode.IsControl) >= 0:
		return "contains a control character"
	}
	return ""
}

// foldReference is Unicode simple case folding (the C and S mappings of
// CaseFolding.txt), rune by rune, derived from the case mappings of
// Go's unicode tables rather than from their fold orbits, which package
// catalog walks. For a cased rune the simple folding is the lowercase of
// its uppercase (ſ, K, ς, µ, U+0345, ϑ, ẞ and the titlecase digraphs
// included), except for two groups:
//
//   - Cherokee folds to its uppercase letters: its lowercase letters came
//     in Unicode 8.0, after folding was made stable;
//   - 'İ' (U+0130) and 'ı' (U+0131) have only Turkic and full mappings,
//     so simple folding leaves them as they are, where the lowercase of
//     the uppercase would give 'i'.
func foldReference(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		b.WriteRune(foldReferenceRune(r))
	}
	return b.String()
}

func foldReferenceRune(r rune) rune {
	switch {
	case r == '\u0130' || r == '\u0131':
		return r
	case 0x13A0 <= r && r <= 0x13FF, 0xAB70 <= r && r <= 0xABBF: // Cherokee, Cherokee Supplement
		return unicode.ToUpper(r)
	}
	return unicode.ToLower(unicode.ToUpper(r))
}
