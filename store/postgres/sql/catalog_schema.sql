-- The catalog for the search workload. Titles and brands are folded by Go
-- (catalog.Fold, Unicode simple case folding) into columns of the C
-- collation: lower() follows the database's collation and locale, which
-- fold differently (and the C locale's lower() folds ASCII alone), so a
-- folded column is what makes "case-insensitive" mean the same here as in
-- allot. Under "C", comparison is byte order, the contract's order.
-- The index serves the prefix as a range [prefix, PrefixEnd(prefix)) in
-- (folded title, sku) order. It carries the folded brand (INCLUDE), but
-- PostgreSQL 15 applies the brand filter to the table's row, not to the
-- index entry (EXPLAIN: "Filter" on the index scan): each title in the
-- range is read from the table, as the matches' titles and counts are.
-- A template: each load makes a table of its own, allot_catalog_<random
-- id>, and its index (search.go says why).
CREATE TABLE {{.Table}} (
    sku          text COLLATE "C" PRIMARY KEY,
    title        text NOT NULL,
    brand        text NOT NULL,
    title_folded text COLLATE "C" NOT NULL,
    brand_folded text COLLATE "C" NOT NULL,
    available    bigint NOT NULL
);
CREATE INDEX {{.Index}} ON {{.Table}} (title_folded, sku) INCLUDE (brand_folded);
