-- A capture's first step: lock the group's rows, in allocation order.
SELECT warehouse, count
FROM rows
WHERE sku = $1 AND cond = $2 AND source = $3
ORDER BY warehouse
FOR UPDATE
