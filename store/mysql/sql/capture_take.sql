-- A capture's second step, once per touched row, under the lock.
UPDATE `{{.Table}}` SET count = count - ?
WHERE sku = ? AND warehouse = ? AND cond = ? AND source = ?
