SELECT sku, warehouse, cond, source, count FROM hold_lines WHERE hold = $1 ORDER BY pos
