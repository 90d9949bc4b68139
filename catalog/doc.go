// Package catalog is allot's product catalog: records sku -> {title, brand,
// attributes} and a case-insensitive prefix search over titles that seeks,
// never scans.
//
// A Catalog keeps every record in a B-tree by SKU and an ordered index (a
// second B-tree) on the key (folded title, SKU). Search folds the query prefix,
// seeks to the first key ≥ it and walks forward until the first key whose
// folded title no longer starts with the prefix: a title-only query costs
// O(log n + offset + limit). With a brand prefix it walks other title
// indexes instead (brand.go): for a one-letter brand prefix, a title index
// per first letter of the folded brand, at the cost of a title-only query;
// for a longer one, the title indexes of the few folded brands that start
// with it, merged, so that the keys it reads are its matches (and offset)
// plus a seek per brand, and none when no brand has the prefix.
//
// Case folding is Unicode simple case folding, rune by rune (see Fold): the
// same folding must be used by anything that claims to answer the same
// query (the bench's peers store a folded column computed by Fold).
//
// Invariants kept by Catalog:
//   - the title index and each brand index hold exactly one key per
//     record, (Fold(title), sku); each distinct brand is kept once, and
//     each folded brand that some record has is one group of the group
//     index;
//   - every record passed Check before it was stored, so decoding a
//     snapshot or replaying a journal re-checks it and rejects corruption;
//   - a rejected Set changes nothing.
//
// What this package must never do: I/O, read a clock, start a goroutine, or
// keep a reference to a caller's mutable buffer. It imports nothing of
// allot's: the engine keeps a Catalog beside the stock rows, and a SKU's
// available units reach Search through a callback.
package catalog
