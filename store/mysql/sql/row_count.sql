SELECT count FROM `{{.Table}}`
WHERE sku = ? AND warehouse = ? AND cond = ? AND source = ?
