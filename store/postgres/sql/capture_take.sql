-- A capture's second step, once per touched row, under the row lock.
UPDATE rows SET count = count - $5
WHERE sku = $1 AND warehouse = $2 AND cond = $3 AND source = $4
