-- Write back an absolute count computed from an earlier read, overwriting
-- whatever another session wrote in between (a lost update).
UPDATE rows SET count = $5
WHERE sku = $1 AND warehouse = $2 AND cond = $3 AND source = $4
