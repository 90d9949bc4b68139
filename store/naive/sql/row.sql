-- A release's read of one row, no lock.
SELECT count FROM rows
WHERE sku = $1 AND warehouse = $2 AND cond = $3 AND source = $4
