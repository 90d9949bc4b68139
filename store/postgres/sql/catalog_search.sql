SELECT sku, title, brand, available
FROM {{.Table}}
WHERE title_folded >= $1 AND title_folded < $2
ORDER BY title_folded, sku
OFFSET $3 LIMIT $4
