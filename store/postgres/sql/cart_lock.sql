-- Lock every row of a cart's groups, in one statement, in sorted key order
-- (sku, cond, source, warehouse): every transaction that locks more than
-- one row locks in this order, so two carts never deadlock. Within a group
-- the rows come in allocation order (ascending byte order of warehouse).
SELECT r.sku, r.cond, r.source, r.warehouse, r.count
FROM rows r
JOIN unnest($1::text[], $2::text[], $3::text[]) AS g(sku, cond, source)
  ON r.sku = g.sku AND r.cond = g.cond AND r.source = g.source
ORDER BY r.sku, r.cond, r.source, r.warehouse
FOR UPDATE OF r
