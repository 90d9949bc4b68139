SELECT sku, title, brand, available
FROM {{.Table}}
WHERE title_folded >= $1 AND title_folded < $2
  AND brand_folded >= $3 AND brand_folded < $4
ORDER BY title_folded, sku
OFFSET $5 LIMIT $6
