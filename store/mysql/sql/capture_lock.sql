-- A capture's first step: the group's rows in allocation order, locked
-- (FOR UPDATE under InnoDB; MyISAM runs it under LOCK TABLES ... WRITE).
SELECT warehouse, count FROM `{{.Table}}`
WHERE sku = ? AND cond = ? AND source = ?
ORDER BY warehouse
{{if .RowLocks}}FOR UPDATE{{end}}
