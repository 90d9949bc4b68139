-- Give the units of holds $1 back to the rows they left (locked by
-- holds_lock_rows), capped at 2^62-1.
UPDATE rows r SET count = LEAST(r.count + t.n, 4611686018427387903)
FROM (
    SELECT sku, warehouse, cond, source, sum(count) AS n
    FROM hold_lines WHERE hold = ANY($1::text[])
    GROUP BY sku, warehouse, cond, source
) t
WHERE r.sku = t.sku AND r.warehouse = t.warehouse AND r.cond = t.cond AND r.source = t.source
