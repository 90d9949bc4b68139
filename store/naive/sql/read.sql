-- A capture's read: the group's rows in warehouse order, with no lock and
-- outside any transaction. The counts may be stale by the time the writes
-- land: that is the point of this adapter.
SELECT warehouse, count
FROM rows
WHERE sku = $1 AND cond = $2 AND source = $3
ORDER BY warehouse
