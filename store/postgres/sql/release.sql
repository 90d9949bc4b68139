-- A release: one atomic statement. No row comes back when the row is
-- unknown or the count would pass 4611686018427387903 (2^62-1); the caller
-- tells the two apart with row_count.sql.
UPDATE rows SET count = count + $5
WHERE sku = $1 AND warehouse = $2 AND cond = $3 AND source = $4
  AND count <= 4611686018427387903 - $5
RETURNING count
