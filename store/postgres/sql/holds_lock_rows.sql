-- Before giving holds' units back: lock the rows they came from in sorted
-- key order, as cart_lock does, so that returns never deadlock with holds.
SELECT 1
FROM rows r
JOIN (SELECT DISTINCT sku, warehouse, cond, source FROM hold_lines WHERE hold = ANY($1::text[])) t
  USING (sku, warehouse, cond, source)
ORDER BY r.sku, r.cond, r.source, r.warehouse
FOR UPDATE OF r
