-- A capture's first step: the group's rows in allocation order, locked
-- (FOR UPDATE under InnoDB; MyISAM runs it under LOCK TABLES ... WRITE).
-- FORCE INDEX (row_group): left to itself the optimizer may scan the
-- primary key by sku instead, locking primary-key records first, while an
-- UPDATE of one row may go through row_group first: two orders, and
-- deadlocks (error 1213) under mixed captures and releases. Captures lock
-- through the group index, updates through the primary key only.
SELECT warehouse, count FROM `{{.Table}}` FORCE INDEX (row_group)
WHERE sku = ? AND cond = ? AND source = ?
ORDER BY warehouse
{{if .RowLocks}}FOR UPDATE{{end}}
