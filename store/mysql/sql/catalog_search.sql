SELECT sku, title, brand, available
FROM `{{.Catalog}}`
WHERE title_folded LIKE ?
ORDER BY title_folded, sku
LIMIT ?, ?
