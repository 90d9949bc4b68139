-- The catalog for the search workload. MariaDB's own
-- case-insensitive collations do not fold as the contract does
-- (utf8mb4_general_ci and utf8mb4_unicode_ci are also accent-insensitive,
-- so 'é' matches 'e', and they order by collation weights, not bytes), so
-- the title and brand are folded by Go (catalog.Fold, Unicode simple case
-- folding) into VARBINARY columns: comparison and LIKE are then byte-wise,
-- and ORDER BY is the contract's byte order. The index (title_folded, sku,
-- brand_folded) serves LIKE 'prefix%' as a range in result order, and the
-- brand filter from the index alone. MyISAM keys hold at most 1,000 bytes:
-- there the index is the folded title's first 900 bytes and the SKU, which
-- still serves LIKE 'prefix%' as a range (the rows check the rest, and
-- sort what the index cannot order: titles that share 900 bytes).
-- A template: each load makes a table of its own, <table>_catalog_<random
-- id> (search.go says why); no IF NOT EXISTS, so that a load never fills a
-- table it did not create.
CREATE TABLE `{{.Catalog}}` (
    sku          VARBINARY(64) NOT NULL PRIMARY KEY,
    title        VARCHAR(256) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    brand        VARCHAR(256) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    title_folded VARBINARY(1024) NOT NULL,
    brand_folded VARBINARY(1024) NOT NULL,
    available    BIGINT NOT NULL,
{{- if .RowLocks}}
    KEY catalog_title (title_folded, sku, brand_folded)
{{- else}}
    KEY catalog_title (title_folded(900), sku)
{{- end}}
) ENGINE = {{.Engine}}
