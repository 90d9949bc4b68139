// Package catalog is allot's product catalog: records sku -> {title, brand,
// attributes} and a case-insensitive prefix search over titles that seeks,
// never scans.
//
// A Catalog keeps every record in a B-tree by SKU and an ordered index (a
// second B-tree) on the key (folded title, SKU). Search folds the query prefix,
// seeks to the first key ≥ it and walks forward until the first key whose
// folded title no longer starts with the prefix: a title-only query costs
// O(log n + offset + limit). With a brand prefix the walk also skips
// records whose folded brand does not start with it; those skipped records
// cost one comparison each, so a brand query costs O(log n + m) where m is
// the number of records with the title prefix up to the last result
// returned (the index is on the title alone, as the contract asks).
//
// Case folding is Unicode simple case folding, rune by rune (see Fold): the
// same folding must be used by anything that claims to answer the same
// query (the bench's peers store a folded column computed by Fold).
//
// Invariants kept by Catalog:
//   - the index holds exactly one key per record, (Fold(title), sku);
//   - every record passed Check before it was stored, so decoding a
//     snapshot or replaying a journal re-checks it and rejects corruption;
//   - a rejected Set changes nothing.
//
// What this package must never do: I/O, read a clock, start a goroutine, or
// keep a reference to a caller's mutable buffer. It imports nothing of
// allot's: the engine keeps a Catalog beside the stock rows, and a SKU's
// available units reach Search through a callback.
package catalog
