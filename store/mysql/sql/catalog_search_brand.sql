SELECT sku, title, brand, available
FROM `{{.Table}}_catalog`
WHERE title_folded LIKE ? AND brand_folded LIKE ?
ORDER BY title_folded, sku
LIMIT ?, ?
