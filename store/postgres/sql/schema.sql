-- The one table of the postgres adapters, in the schema search_path names.
-- COLLATE "C" compares bytes, so ORDER BY warehouse is the domain's
-- allocation order (ascending byte order) whatever the database's locale.
-- The group index (sku, cond, source, warehouse) serves a capture's
-- SELECT ... ORDER BY warehouse FOR UPDATE without a sort.
CREATE {{if .Unlogged}}UNLOGGED {{end}}TABLE IF NOT EXISTS rows (
    sku       text COLLATE "C" NOT NULL,
    warehouse text COLLATE "C" NOT NULL,
    cond      text COLLATE "C" NOT NULL,
    source    text COLLATE "C" NOT NULL,
    count     bigint NOT NULL{{if .Check}} CHECK (count >= 0){{end}},
    price     bigint NOT NULL,
    PRIMARY KEY (sku, warehouse, cond, source)
);
CREATE INDEX IF NOT EXISTS rows_group ON rows (sku, cond, source, warehouse);
