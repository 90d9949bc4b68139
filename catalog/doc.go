// Package catalog is allot's product catalog: records sku -> {title, brand,
// attributes} and a case-insensitive prefix search over titles that seeks,
// never scans.
//
// A Catalog keeps every record in a B-tree by SKU and an ordered index (a
// second B-tree) on the key (folded title, SKU). Search folds the query prefix,
// seeks to the first key ≥ it and walks forward until the first key whose
// folded title no longer starts with the prefix: a title-only query costs
// O(log n + offset + limit). With a brand prefix it walks a second index
// instead, a title index per first letter of the folded brand whose keys
// carry the brand's first bytes (brand.go): a one-letter brand prefix costs
// the same as a title-only query, and a longer one also walks the records
// of other brands with the same first letter up to the last result.
//
// Case folding is Unicode simple case folding, rune by rune (see Fold): the
// same folding must be used by anything that claims to answer the same
// query (the bench's peers store a folded column computed by Fold).
//
// Invariants kept by Catalog:
//   - the title index and the brand index each hold exactly one key per
//     record, (Fold(title), sku); each distinct brand is kept once;
//   - every record passed Check before it was stored, so decoding a
//     snapshot or replaying a journal re-checks it and rejects corruption;
//   - a rejected Set changes nothing.
//
// What this package must never do: I/O, read a clock, start a goroutine, or
// keep a reference to a caller's mutable buffer. It imports nothing of
// allot's: the engine keeps a Catalog beside the stock rows, and a SKU's
// available units reach Search through a callback.
package catalog
