// Package search is the bench's "search" workload: a product catalog of
// (by default) 1,000,000 records and case-insensitive title-prefix queries
// over it, run against every store that implements store.Searcher, each
// store's answers compared with the reference (Reference: the contract's
// rules written again, without package catalog, which allot answers
// with).
//
// The catalog (Generate) has realistic titles: 2..6 words drawn with a
// Zipf skew from a vocabulary mixing English, German, French, Spanish,
// Polish, Czech, Greek, Russian and Turkish words, each word capitalized,
// lower or upper case at random, so that a few first letters are very
// common and many titles carry letters outside ASCII. Brands are drawn
// with a skew too. About 80% of SKUs have one or two stock rows: a search
// result's "available" is the SKU's units over all its rows.
//
// Queries are prefixes of 1..4 runes taken from titles of the catalog
// (the one-letter ones included: they are what made the published
// procedure scan), each rune's case flipped at random; offsets 0..100;
// limits 10 and 20; a share of them (--brand-share) also carry a brand
// prefix of 1..2 runes, the published search's two-field form.
//
// The check: --check-sample queries (1,000 by default), spread evenly
// over the run (query j·n/sample for slot j of the sample, n queries),
// are kept with the store's answers and compared, result by result, with
// the Reference's, so that answers that go wrong partway through
// a run are seen too; when a --duration bound stopped the timed part
// before all of them ran, the rest run untimed after it, so every run is
// checked on the full sample. Any difference fails the run. The test's
// deliberately broken stores (no case folding; the published procedure's
// order; a wrong available) prove that the check sees each difference.
package search
