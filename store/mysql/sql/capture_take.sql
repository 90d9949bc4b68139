-- A capture's second step, once per touched row, under the lock; through
-- the primary key (see capture_lock.sql).
UPDATE `{{.Table}}` FORCE INDEX (PRIMARY) SET count = count - ?
WHERE sku = ? AND warehouse = ? AND cond = ? AND source = ?
