-- The one table of a mysql adapter ({{.Table}} is `rows` for InnoDB,
-- `rows_myisam` for MyISAM). VARBINARY compares bytes, so ORDER BY
-- warehouse is the domain's allocation order (ascending byte order); a
-- character collation would fold case and, for the _bin ones, ignore
-- trailing spaces. The group index (sku, cond, source, warehouse) serves a
-- capture's locking SELECT without a sort.
CREATE TABLE IF NOT EXISTS `{{.Table}}` (
    sku       VARBINARY(64) NOT NULL,
    warehouse VARBINARY(64) NOT NULL,
    cond      VARBINARY(64) NOT NULL,
    source    VARBINARY(64) NOT NULL,
    count     BIGINT NOT NULL CHECK (count >= 0),
    price     BIGINT NOT NULL,
    PRIMARY KEY (sku, warehouse, cond, source),
    KEY row_group (sku, cond, source, warehouse)
) ENGINE = {{.Engine}}
