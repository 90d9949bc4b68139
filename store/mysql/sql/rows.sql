SELECT sku, warehouse, cond, source, count, price FROM `{{.Table}}`
